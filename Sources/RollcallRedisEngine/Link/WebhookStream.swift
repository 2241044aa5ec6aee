import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// A node's side of the cluster's durable webhook events (PROTOCOL §11 *(1.2)* "Nothing
/// lost"; docs/cluster.md, "Webhooks" and "Key groups and buckets"): the scripts that make
/// changes write the events into their key group's stream `P{<g>}wh`
/// (``WebhookStreamScripts``); this takes this node's share of them, through the consumer group
/// `d` under the node's id, and settles them once posted.
///
/// - ``take(_:)`` answers the events of one batch: from each stream it asks, first the ones
///   still pending for this node (it restarted with its id), then ones another node took and
///   left pending longer than ``claimIdleMs`` (it died, or was stopped), else new ones once
///   `batchMaxEvents` wait or the oldest has waited `batchMaxDelaySeconds`. With one key group
///   that is the one stream; with more, the streams of groups this node wrote to lately
///   (``WebhookStreamGroups``), of groups known to hold events, and group 0's (the user-status
///   scripts' for now), one script per stream sent together; every ``claimIdleMs`` a sweep
///   (`XLEN` of every group's stream, sent together) finds the streams other nodes left events in.
/// - ``touch(_:)`` keeps the batch in flight this node's while it retries.
/// - ``settle(_:)`` removes a batch acknowledged with a 2xx, or dropped after `retryMaxSeconds`.
///
/// An event's id is `keyPrefix` + its entry id in group 0's stream, `keyPrefix` + `<group>-` +
/// its entry id in another's: fixed when the script wrote it, the same from whichever node
/// posts it, and naming the stream its settle and touch go to. Runs on the link's loop (the
/// service thread).
public final class WebhookStream {
    /// One event: its id and its encoded object without the id.
    public struct Event: Equatable, Sendable {
        /// `keyPrefix` + (`<group>-` +) the stream entry's id.
        public let id: String
        /// The event as one compact JSON object starting with `{"event":`.
        public let bytes: [UInt8]
    }

    /// What one turn at the streams found.
    public struct Turn: Equatable, Sendable {
        /// The events of the next batch (empty: nothing is due).
        public let events: [Event]
        /// Events `queueMaxEvents` pushed out of the streams asked since the previous turn of any node.
        public let dropped: Int
        /// Milliseconds until the oldest waiting event is due; nil when none waits.
        public let nextDueMs: Int64?
        /// Events in the streams after this turn, the cluster's whole backlog (batches in flight
        /// on any node included) as far as this node last saw each stream.
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

    private let route: StoreRoute
    private let prefix: String
    private let keys: ClusterKeys
    private let consumer: String
    private let count: Int
    private let delayMs: Int64
    /// The groups this node's scripts wrote to lately (more than one group only).
    private let written: WebhookStreamGroups?
    /// Each stream's length as this node last saw it (its takes, touches and sweeps).
    private var lengths: [Int: Int] = [:]
    /// When the next sweep of every group's stream is due (monotonic ms; 0: at the first turn).
    private var nextSweepAt: Int64 = 0
    /// Which stream a turn's batch starts with, so that no stream waits behind busier ones.
    private var turns = 0
    /// Pending entries of another node idle this long are taken over.
    public let claimIdleMs: Int64

    /// The streams of `link`'s cluster, read as node `link.nodeId` with `webhooks`' batch limits.
    public init(link: ClusterLink, webhooks: Configuration.Webhooks) {
        route = link.route
        prefix = link.configuration.cluster.keyPrefix
        keys = ClusterKeys(prefix: prefix, groups: KeyGroups(for: link.configuration))
        consumer = link.nodeId
        count = max(1, webhooks.batchMaxEvents)
        delayMs = Int64((webhooks.batchMaxDelaySeconds * 1000).rounded())
        claimIdleMs = Self.claimIdleMs(link.configuration.cluster, pollMs: Self.pollMs(webhooks))
        written = link.webhookGroups
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
        guard let written else { return takeFrom([0], done) }
        let now = MonotonicClock.now
        var groups = written.recent(now: now).union(lengths.compactMap { $0.value > 0 ? $0.key : nil })
        groups.insert(0)
        guard now >= nextSweepAt else { return takeFrom(groups.sorted(), done) }
        nextSweepAt = now + claimIdleMs
        sweep { [self] result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let found): takeFrom(groups.union(found).sorted(), done)
            }
        }
    }

    /// Every group's stream length (`XLEN`, sent together): the groups holding events.
    private func sweep(_ done: @escaping (Result<Set<Int>, RedisError>) -> Void) {
        let groups = Array(keys.groups.all)
        gatherEvery(groups.count, { [self] index, answer in
            let group = groups[index]
            route.send([Array("XLEN".utf8), Array(keys.webhookStream(group: group).utf8)]) { [self] result in
                answer(result.map { lengths[group] = Int(StoreReply($0).integer ?? 0) })
            }
        }) { [self] result in
            done(result.map { _ in Set(lengths.compactMap { $0.value > 0 ? $0.key : nil }) })
        }
    }

    /// One take script per stream of `groups`, sent together; the turn merges their answers
    /// (events cut at `batchMaxEvents`: the rest stay pending for this node, taken first at its
    /// next turns).
    private func takeFrom(_ groups: [Int], _ done: @escaping (Result<Turn, RedisError>) -> Void) {
        gatherEvery(groups.count, { [self] index, answer in
            let group = groups[index]
            let arguments = WebhookStreamScripts.take.arguments([
                "stream": keys.webhookStream(group: group), "group": Self.group, "consumer": consumer, "count": count, "delayMs": delayMs,
                "claimIdleMs": claimIdleMs,
            ])
            let idPrefix = eventIdPrefix(group: group)
            route.run(WebhookStreamScripts.take, arguments: arguments) { [self] result in
                answer(result.map { reply in
                    let reply = StoreReply(reply)
                    lengths[group] = Int(reply[3].integer ?? 0)
                    return ((reply[0].elements ?? []).compactMap { Self.event($0, prefix: idPrefix) },
                            Int(reply[1].integer ?? 0), reply[2].integer ?? 0)
                })
            }
        }) { [self] result in
            done(result.map { turn($0) })
        }
    }

    /// The turn of the streams' answers, starting with a different stream at each turn.
    private func turn(_ answers: [(events: [Event], dropped: Int, nextDue: Int64)]) -> Turn {
        let start = answers.isEmpty ? 0 : turns % answers.count
        turns &+= 1
        let events = (answers[start...] + answers[..<start]).flatMap(\.events)
        let due = answers.map(\.nextDue).filter { $0 > 0 }.min()
        return Turn(events: Array(events.prefix(count)), dropped: answers.reduce(0) { $0 + $1.dropped }, nextDueMs: due,
                    inStream: lengths.values.reduce(0, +))
    }

    /// Removes the events `ids` from the group's pending list and from their streams.
    public func settle(_ ids: [String], _ done: @escaping (Result<Void, RedisError>) -> Void = { _ in }) {
        let byGroup = entryIds(ids)
        guard !byGroup.isEmpty else { return done(.success(())) }
        var remaining = byGroup.count, failed = false
        let script = WebhookStreamScripts.settle
        for (group, entries) in byGroup {
            let arguments = script.arguments(["stream": keys.webhookStream(group: group), "group": Self.group], rest: entries)
            route.run(script, arguments: arguments) { result in
                guard !failed else { return }
                if case .failure(let error) = result {
                    failed = true
                    return done(.failure(error))
                }
                remaining -= 1
                if remaining == 0 { done(.success(())) }
            }
        }
    }

    /// Restarts the idle time of the events `ids` (the batch this node is retrying), and
    /// hands `done` the number of events in the streams (nil when Redis did not answer).
    public func touch(_ ids: [String], _ done: @escaping (Int?) -> Void = { _ in }) {
        var byGroup = entryIds(ids)
        if byGroup.isEmpty { byGroup = [0: []] }
        var remaining = byGroup.count, failed = false
        let script = WebhookStreamScripts.touch
        for (group, entries) in byGroup {
            let arguments = script.arguments(["stream": keys.webhookStream(group: group), "group": Self.group, "consumer": consumer],
                                             rest: entries)
            route.run(script, arguments: arguments) { [self] result in
                guard !failed else { return }
                guard case .success(.integer(let length)) = result else {
                    failed = true
                    return done(nil)
                }
                lengths[group] = Int(length)
                remaining -= 1
                if remaining == 0 { done(lengths.values.reduce(0, +)) }
            }
        }
    }

    /// What an event id of group `group`'s stream starts with: `keyPrefix`, and `<group>-`
    /// but for group 0 (whose ids are those of the one stream a single group has).
    private func eventIdPrefix(group: Int) -> String {
        group == 0 ? prefix : prefix + "\(group)-"
    }

    /// The stream entry ids of the events `ids`, by group (events of another cluster, and ids
    /// of no group this node knows, are left out).
    private func entryIds(_ ids: [String]) -> [Int: [[UInt8]]] {
        var byGroup: [Int: [[UInt8]]] = [:]
        for id in ids where id.hasPrefix(prefix) {
            let rest = id.utf8.dropFirst(prefix.utf8.count)
            let parts = rest.split(separator: UInt8(ascii: "-"), maxSplits: 1, omittingEmptySubsequences: false)
            // `<ms>-<seq>` in group 0's stream; `<group>-<ms>-<seq>` in another's.
            if parts.count == 2, parts[1].contains(UInt8(ascii: "-")) {
                guard let group = Int(String(decoding: parts[0], as: UTF8.self)), keys.groups.all.contains(group), group > 0 else { continue }
                byGroup[group, default: []].append(Array(parts[1]))
            } else {
                byGroup[0, default: []].append(Array(rest))
            }
        }
        return byGroup
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
