import RollcallCore
import RollcallRedis

/// A node's side of the cluster's durable webhook events (PROTOCOL §11 *(1.2)* "Nothing
/// lost"; docs/cluster.md, "Webhooks"): the scripts that make changes write the events into
/// the stream `P wh` (``WebhookStreamScripts``); this takes this node's share of them, through
/// the consumer group `d` under the node's id, and settles them once posted.
///
/// - ``take(_:)`` answers the events of one batch: first the ones still pending for this node
///   (it restarted with its id), then ones another node took and left pending longer than
///   ``claimIdleMs`` (it died, or was stopped), else new ones once `batchMaxEvents` wait or the
///   oldest has waited `batchMaxDelaySeconds`.
/// - ``touch(_:)`` keeps the batch in flight this node's while it retries.
/// - ``settle(_:)`` removes a batch acknowledged with a 2xx, or dropped after `retryMaxSeconds`.
///
/// An event's id is `keyPrefix` + its entry id: fixed when the script wrote it, the same from
/// whichever node posts it. Runs on the link's loop (the service thread).
public final class WebhookStream {
    /// One event: its id and its encoded object without the id.
    public struct Event: Equatable, Sendable {
        /// `keyPrefix` + the stream entry's id.
        public let id: String
        /// The event as one compact JSON object starting with `{"event":`.
        public let bytes: [UInt8]
    }

    /// What one turn at the stream found.
    public struct Turn: Equatable, Sendable {
        /// The events of the next batch (empty: nothing is due).
        public let events: [Event]
        /// Events `queueMaxEvents` pushed out of the stream since the previous turn of any node.
        public let dropped: Int
        /// Milliseconds until the oldest waiting event is due; nil when none waits.
        public let nextDueMs: Int64?
        /// Events in the stream after this turn, the cluster's whole backlog (batches in flight
        /// on any node included).
        public var inStream = 0

        /// A turn's findings.
        public init(events: [Event], dropped: Int, nextDueMs: Int64?, inStream: Int = 0) {
            self.events = events
            self.dropped = dropped
            self.nextDueMs = nextDueMs
            self.inStream = inStream
        }
    }

    /// The consumer group every node reads through.
    static let group = "d"

    private let connection: RedisConnection
    private let prefix: String
    private let stream: String
    private let consumer: String
    private let count: Int
    private let delayMs: Int64
    /// Pending entries of another node idle this long are taken over.
    public let claimIdleMs: Int64

    /// The stream of `link`'s cluster, read as node `link.nodeId` with `webhooks`' batch limits.
    public init(link: ClusterLink, webhooks: Configuration.Webhooks) {
        connection = link.commands
        prefix = link.configuration.cluster.keyPrefix
        stream = ClusterKeys(prefix: prefix).webhookStream
        consumer = link.nodeId
        count = max(1, webhooks.batchMaxEvents)
        delayMs = Int64((webhooks.batchMaxDelaySeconds * 1000).rounded())
        claimIdleMs = Self.claimIdleMs(link.configuration.cluster, pollMs: Self.pollMs(webhooks))
    }

    /// How often a node looks at the stream (ms): half `batchMaxDelaySeconds`, within 50 ms to 1 s.
    public static func pollMs(_ webhooks: Configuration.Webhooks) -> Int64 {
        Int64((min(1, max(0.05, webhooks.batchMaxDelaySeconds / 2)) * 1000).rounded())
    }

    /// Twice `nodeTimeoutSeconds`, and at least ten polls: a live node touches its batch at every
    /// poll, so only a node that stopped (or lost Redis that long) has its batch taken over.
    static func claimIdleMs(_ cluster: Configuration.Cluster, pollMs: Int64) -> Int64 {
        max(Int64((cluster.nodeTimeoutSeconds * 2000).rounded()), 10 * pollMs)
    }

    /// One turn (see the type's documentation).
    public func take(_ done: @escaping (Result<Turn, RedisError>) -> Void) {
        let arguments = WebhookStreamScripts.take.arguments([
            "stream": stream, "group": Self.group, "consumer": consumer, "count": count, "delayMs": delayMs,
            "claimIdleMs": claimIdleMs,
        ])
        WebhookStreamScripts.take.run(on: connection, arguments: arguments) { [prefix] result in
            done(result.map { reply in
                let reply = StoreReply(reply)
                let events = (reply[0].elements ?? []).compactMap { Self.event($0, prefix: prefix) }
                let due = reply[2].integer ?? 0
                return Turn(events: events, dropped: Int(reply[1].integer ?? 0), nextDueMs: due > 0 ? due : nil,
                            inStream: Int(reply[3].integer ?? 0))
            })
        }
    }

    /// Removes the events `ids` from the group's pending list and from the stream.
    public func settle(_ ids: [String], _ done: @escaping (Result<Void, RedisError>) -> Void = { _ in }) {
        let entries = entryIds(ids)
        guard !entries.isEmpty else { return done(.success(())) }
        let script = WebhookStreamScripts.settle
        script.run(on: connection, arguments: script.arguments(["stream": stream, "group": Self.group], rest: entries)) { result in
            done(result.map { _ in () })
        }
    }

    /// Restarts the idle time of the events `ids` (the batch this node is retrying), and
    /// hands `done` the number of events in the stream (nil when Redis did not answer).
    public func touch(_ ids: [String], _ done: @escaping (Int?) -> Void = { _ in }) {
        let entries = entryIds(ids)
        let script = WebhookStreamScripts.touch
        let arguments = script.arguments(["stream": stream, "group": Self.group, "consumer": consumer], rest: entries)
        script.run(on: connection, arguments: arguments) { result in
            guard case .success(.integer(let length)) = result else { return done(nil) }
            done(Int(length))
        }
    }

    /// The stream entry ids of the events `ids` (events of another cluster are left out).
    private func entryIds(_ ids: [String]) -> [[UInt8]] {
        ids.compactMap { id in id.hasPrefix(prefix) ? Array(id.utf8.dropFirst(prefix.utf8.count)) : nil }
    }

    /// An entry `{id, k, b, v}` as an event: `p` and `c` carry their bytes, `u` the record's
    /// fields (as in a user's inbox) and its version.
    static func event(_ entry: StoreReply, prefix: String) -> Event? {
        guard let id = entry[0].text, let kind = entry[1].text, let body = entry[2].bytes else { return nil }
        switch kind {
        case "p", "c":
            return Event(id: prefix + id, bytes: body)
        case "u":
            let fields = body.split(separator: UInt8(ascii: "\n"), maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7 else { return nil }
            func text(_ index: Int) -> String { String(decoding: fields[index], as: UTF8.self) }
            func time(_ index: Int) -> Int64 { Int64(text(index)) ?? 0 }
            let custom = fields[6].first == UInt8(ascii: "=") ? String(decoding: fields[6].dropFirst(), as: UTF8.self) : nil
            let record = UserStatusScripts.record(user: text(0), status: text(1), times: (time(2), time(3), time(4)),
                                                  platforms: text(5), customStatus: custom)
            let version = entry[3].text.flatMap { Int64($0) } ?? 0
            return Event(id: prefix + id, bytes: BackendEvents.userStatus(record, version: version))
        default:
            return nil
        }
    }
}
