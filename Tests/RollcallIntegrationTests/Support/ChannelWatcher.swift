import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol

/// A well-behaved client joined to one channel with presence and messages, holding the
/// roster a real client would hold: its snapshot plus every presence event, in order.
///
/// It checks, as it goes, that `seq` grows by exactly one per presence event and that the
/// messages of one publisher arrive in order without gaps or repeats. ``checkRoster(id:)``
/// compares the roster with a `getOnlineUsers` reply at the exact point of the reply in the
/// stream: every event before the reply is applied, none after, so the comparison is exact
/// even while others keep changing the channel.
final class ChannelWatcher {
    let connection: RollcallConnection
    let userId: String
    let channel: String
    let channelType: String
    /// Only `message` events from this publisher are sequence-checked (`message.n`).
    let publisher: String

    /// userId → state, as built from the snapshot and the events.
    private(set) var roster: [String: [String: String]] = [:]
    private(set) var lastSeq: Int?
    /// The `n` of each message from ``publisher``, in arrival order.
    private(set) var messageNumbers: [Int] = []
    /// Users removed by `timeout` (announced or in an `interval` event).
    private(set) var timedOut = 0
    /// Everything that broke the rules (wrong seq, unknown event type, …).
    private(set) var problems: [String] = []
    private var cursor = 0
    private var checks = 0

    /// Logs in as `userId` and joins (presence and messages); waits for the snapshot.
    init(broker: BrokerProcess, userId: String, channel: String, channelType: String = "message",
         publisher: String) throws {
        self.userId = userId
        self.channel = channel
        self.channelType = channelType
        self.publisher = publisher
        connection = try broker.session(userId, recordTranscript: true)
        let join = try connection.request("join", ["channel": .string(channel), "channelType": .string(channelType),
                                                   "presence": true, "messages": true])
        guard join.ok else { throw HarnessError("watcher join failed: \(join)") }
        _ = try connection.waitForEvent(timeout: .seconds(10)) { $0.type == "snapshot" }
        catchUp()
    }

    /// Applies every object received so far.
    func catchUp() {
        let transcript = connection.transcript
        consume(transcript, upTo: transcript.count)
    }

    /// Asks `getOnlineUsers` (with states) and compares it with the roster at the listing's
    /// `seq`. On one broker the events up to that `seq` always precede the reply. On a cluster
    /// (PROTOCOL §9) the listing and the events come over different Redis connections, so the
    /// reply may overtake events (then they are awaited) or be overtaken (then it is asked
    /// again). Returns nil when they match, else a description of the difference.
    func checkRoster(timeout: Duration = .seconds(10)) throws -> String? {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        while true {
            let reply = try listRoster(timeout: timeout)
            guard reply.ok else { return "getOnlineUsers failed: \(reply)" }
            let transcript = connection.transcript
            guard let position = transcript[cursor...].firstIndex(where: { $0["event"] == nil && $0["id"] == reply.id }) else {
                return "the reply is missing from the transcript"
            }
            consume(transcript, upTo: position + 1)
            if let listedSeq = reply["seq"]?.numberValue?.intValue, let seq = lastSeq, seq != listedSeq {
                if seq < listedSeq {
                    // Events up to the listing's seq are on their way: apply them, no further.
                    _ = eventually(timeout: max(0, deadline.timeIntervalSinceNow)) {
                        let more = connection.transcript
                        consume(more, upTo: more.count, stoppingAtSeq: listedSeq)
                        return (lastSeq ?? 0) >= listedSeq
                    }
                }
                if lastSeq != listedSeq {
                    if Date() < deadline { continue }
                    return "events reached seq \(lastSeq.map(String.init) ?? "?"), the listing is at seq \(listedSeq)"
                }
            }
            return compare(reply)
        }
    }

    /// One `getOnlineUsers` page of up to 1000 users with states, waiting out `RATE_LIMITED`.
    private func listRoster(timeout: Duration) throws -> Reply {
        var reply: Reply
        repeat { // a well-behaved client waits out RATE_LIMITED
            checks += 1
            reply = try connection.request("getOnlineUsers", [
                "channel": .string(channel), "channelType": .string(channelType),
                "includeState": true, "pageSize": 1000,
            ], id: JSON.string("roster-\(checks)"), timeout: timeout)
            if let retry = reply.retryAfterMs { Thread.sleep(forTimeInterval: Double(retry) / 1000) }
        } while reply.errorCode == .rateLimited
        return reply
    }

    /// The listing against the roster from events; nil when they match.
    private func compare(_ reply: Reply) -> String? {
        var listed: [String: [String: String]] = [:]
        for user in reply["users"]?.arrayValue ?? [] {
            guard let name = user["userId"]?.stringValue else { return "user without userId: \(user)" }
            listed[name] = Self.state(user["state"])
        }
        if reply["nextPage"] != .null { return "roster needs more than one page" }
        if reply["totalOccupancy"]?.numberValue?.intValue != listed.count {
            return "totalOccupancy \(String(describing: reply["totalOccupancy"])) ≠ \(listed.count) users listed"
        }
        guard listed == roster else {
            return "roster from events \(roster.sorted { $0.key < $1.key }) ≠ getOnlineUsers \(listed.sorted { $0.key < $1.key })"
        }
        return nil
    }

    /// Waits until the message `n` from the publisher has arrived (and was applied).
    func waitForMessage(_ n: Int, timeout: TimeInterval = 10) -> Bool {
        let arrived = eventually(timeout: timeout) {
            catchUp()
            return messageNumbers.contains(n)
        }
        _ = connection.drainEvents() // the transcript is the record; keep the queue small
        return arrived
    }

    /// Applies `transcript[cursor..<end]`, or only until a presence event reached `seq`.
    private func consume(_ transcript: [JSONObject], upTo end: Int, stoppingAtSeq seq: Int? = nil) {
        while cursor < end {
            if let seq, let last = lastSeq, last >= seq { return }
            apply(transcript[cursor])
            cursor += 1
        }
    }

    private func apply(_ object: JSONObject) {
        switch object["event"]?.stringValue {
        case "presence"?:
            guard object["channel"]?.stringValue == channel, object["channelType"]?.stringValue == channelType else { return }
            applyPresence(object)
        case "message"?:
            guard object["publisher"]?.stringValue == publisher,
                  let n = object["message"]?["n"]?.numberValue?.intValue else { return }
            if let last = messageNumbers.last, n != last + 1 {
                problems.append("message \(n) after \(last)")
            } else if messageNumbers.isEmpty, n != 0 {
                problems.append("first message is \(n)")
            }
            messageNumbers.append(n)
        default:
            return
        }
    }

    private func applyPresence(_ event: JSONObject) {
        let type = event["type"]?.stringValue ?? ""
        let seq = event["seq"]?.numberValue?.intValue
        if type == "snapshot" {
            roster = [:]
            for member in event["snapshot"]?.arrayValue ?? [] {
                if let name = member["userId"]?.stringValue { roster[name] = Self.state(member["state"]) }
            }
            if event["truncated"]?.boolValue == true { problems.append("truncated snapshot") }
            lastSeq = seq
            return
        }
        if let last = lastSeq, let seq, seq != last + 1 {
            problems.append("\(type) event seq \(seq) after \(last)")
        }
        lastSeq = seq ?? lastSeq
        let publisherName = event["publisher"]?.stringValue ?? ""
        switch type {
        case "join", "stateChanged":
            roster[publisherName] = Self.state(event["state"])
        case "leave", "timeout":
            if roster.removeValue(forKey: publisherName) == nil { problems.append("\(type) of absent \(publisherName)") }
            if type == "timeout" { timedOut += 1 }
        case "interval":
            let lists = event["interval"]
            for name in lists?["join"]?.arrayValue ?? [] { if let n = name.stringValue { roster[n] = [:] } }
            for key in ["leave", "timeout"] {
                for name in lists?[key]?.arrayValue ?? [] { if let n = name.stringValue { roster[n] = nil } }
            }
            timedOut += lists?["timeout"]?.arrayValue?.count ?? 0
            for entry in lists?["stateChanged"]?.arrayValue ?? [] {
                if let n = entry["userId"]?.stringValue { roster[n] = Self.state(entry["state"]) }
            }
        default:
            problems.append("unknown presence event type \(type)")
        }
    }

    static func state(_ value: JSON?) -> [String: String] {
        var result: [String: String] = [:]
        for member in value?.objectValue?.members ?? [] { result[member.key] = member.value.stringValue ?? "<\(member.value)>" }
        return result
    }
}
