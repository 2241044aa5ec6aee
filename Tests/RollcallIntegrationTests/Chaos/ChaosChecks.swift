import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol

/// The invariants a chaos run checks once it is healed and quiet (issue 29), over what every
/// client knows of its own session, what every client's roster shows, what each node's server
/// API lists, and what the webhook receiver got.
struct ChaosChecks {
    /// One channel as a node's `getOnlineUsers` lists it.
    struct Listing: Equatable {
        var users: [String: [String: String]]
        var seq: Int
    }

    let cluster: ChaosCluster
    let clients: [ChaosClient]
    let channels: [String]

    /// Every user the clients expect in `channel`, with the state each asked for: the members
    /// of their current (live) sessions. Sessions they gave up, or that the broker closed,
    /// must have timed out by now.
    func expected(_ channel: String) -> [String: [String: String]] {
        var users: [String: [String: String]] = [:]
        for client in clients {
            if let intent = client.intents[channel], intent.member { users[client.userId] = intent.state }
        }
        return users
    }

    /// `getOnlineUsers` (all pages, with state) of `channel` through node `node`'s server API.
    func listing(node: Int, channel: String) throws -> Listing {
        var users: [String: [String: String]] = [:]
        var page: String?
        var seq = 0
        repeat {
            var body: JSONObject = ["channel": .string(channel), "includeState": true, "pageSize": 100]
            if let page { body["page"] = .string(page) }
            let result = try ServerAPIRequest.ok(port: cluster.nodePort(node), "getOnlineUsers", .object(body))
            if page == nil { seq = result["seq"]?.numberValue?.intValue ?? -1 }
            for user in result["users"]?.arrayValue ?? [] {
                users[user["userId"]?.stringValue ?? "?"] = stringMap(user["state"]) ?? [:]
            }
            page = result["nextPage"]?.stringValue
        } while page != nil
        return Listing(users: users, seq: seq)
    }

    /// Every listing, per node then channel; a node that does not answer is a violation.
    func listings(_ violations: inout [ChaosViolation]) -> [[String: Listing]] {
        (0..<3).map { node in
            var byChannel: [String: Listing] = [:]
            for channel in channels {
                do {
                    byChannel[channel] = try listing(node: node, channel: channel)
                } catch {
                    violations.append(ChaosViolation(invariant: "api", subject: "n\(node + 1) #\(channel)",
                                                     detail: "getOnlineUsers failed: \(error)", users: []))
                }
            }
            return byChannel
        }
    }

    /// Every node lists, for every channel, exactly the users the clients' sessions are in,
    /// with the states they set; every node shows the same `seq`.
    func checkListings(_ listings: [[String: Listing]]) -> [ChaosViolation] {
        var violations: [ChaosViolation] = []
        for channel in channels {
            let want = expected(channel)
            var seqs: [Int] = []
            for node in 0..<3 {
                guard let listed = listings[node][channel] else { continue }
                seqs.append(listed.seq)
                let extra = Set(listed.users.keys).subtracting(want.keys).sorted()
                let missing = Set(want.keys).subtracting(listed.users.keys).sorted()
                if !extra.isEmpty || !missing.isEmpty {
                    violations.append(ChaosViolation(
                        invariant: "listing", subject: "n\(node + 1) #\(channel)",
                        detail: "listed but with no live session in it: \(extra); in it but not listed: \(missing) (seq \(listed.seq))",
                        users: extra + missing))
                }
                for (user, state) in want.sorted(by: { $0.key < $1.key }) {
                    if let shown = listed.users[user], shown != state {
                        violations.append(ChaosViolation(invariant: "listing.state", subject: "n\(node + 1) #\(channel) \(user)",
                                                         detail: "listed with state \(shown), the client set \(state)", users: [user]))
                    }
                }
            }
            if Set(seqs).count > 1 {
                violations.append(ChaosViolation(invariant: "listing.seq", subject: "#\(channel)",
                                                 detail: "the nodes list seq \(seqs)", users: []))
            }
        }
        return violations
    }

    /// Every client's roster (its snapshot, then events applied by `seq`) equals its node's
    /// listing; the client's own state is left out (its own changes are not sent to it).
    func checkRosters(_ listings: [[String: Listing]]) -> [ChaosViolation] {
        var violations: [ChaosViolation] = []
        for client in clients {
            for channel in channels where client.intents[channel]?.member == true {
                guard let listed = listings[client.node][channel] else { continue }
                guard let roster = client.rosters[channel] else {
                    violations.append(ChaosViolation(invariant: "roster", subject: "\(client.userId) on n\(client.node + 1) #\(channel)",
                                                     detail: "a member with no snapshot on its connection", users: [client.userId]))
                    continue
                }
                var held: [String: [String: String]] = [:]
                for member in roster.sortedMembers { held[member.userId] = member.userId == client.userId ? [:] : member.state }
                var shown = listed.users
                if shown[client.userId] != nil { shown[client.userId] = [:] }
                if held != shown {
                    let extra = Set(held.keys).subtracting(shown.keys).sorted()
                    let missing = Set(shown.keys).subtracting(held.keys).sorted()
                    let states = held.keys.filter { shown[$0] != nil && shown[$0] != held[$0] }.sorted()
                        .map { "\($0): \(held[$0]!) vs \(shown[$0]!)" }
                    violations.append(ChaosViolation(
                        invariant: "roster", subject: "\(client.userId) on n\(client.node + 1) #\(channel)",
                        detail: "roster (seq \(roster.seq ?? -1)\(roster.isStale ? ", stale" : "")) differs from the listing (seq \(listed.seq)): "
                            + "extra \(extra), missing \(missing), states \(states)",
                        users: [client.userId] + extra + missing))
                }
            }
        }
        return violations
    }

    /// `getUserStatus` on every node: every client's user is `online` on its one platform,
    /// with the custom status it set last.
    func checkStatuses() -> [ChaosViolation] {
        var violations: [ChaosViolation] = []
        let ids = clients.map(\.userId)
        for node in 0..<3 {
            let result: JSON
            do {
                result = try ServerAPIRequest.ok(port: cluster.nodePort(node), "getUserStatus", ["userIds": .array(ids.map(JSON.string))])
            } catch {
                violations.append(ChaosViolation(invariant: "api", subject: "n\(node + 1)", detail: "getUserStatus failed: \(error)", users: []))
                continue
            }
            var records: [String: JSON] = [:]
            for record in result["statuses"]?.arrayValue ?? [] { records[record["userId"]?.stringValue ?? "?"] = record }
            for client in clients {
                guard let record = records[client.userId] else {
                    violations.append(ChaosViolation(invariant: "status", subject: "n\(node + 1) \(client.userId)",
                                                     detail: "no status record", users: [client.userId]))
                    continue
                }
                let status = record["status"]?.stringValue ?? "?"
                let platforms = (record["platforms"]?.arrayValue ?? []).compactMap(\.stringValue)
                let custom = record["customStatus"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                var problems: [String] = []
                if status != "online" { problems.append("status \(status), its session is live") }
                if platforms != [client.platform] { problems.append("platforms \(platforms), its one session is \(client.platform)") }
                if custom != client.customStatus { problems.append("customStatus \(custom ?? "none"), it set \(client.customStatus ?? "none")") }
                if !problems.isEmpty {
                    violations.append(ChaosViolation(invariant: "status", subject: "n\(node + 1) \(client.userId)",
                                                     detail: problems.joined(separator: "; "), users: [client.userId]))
                }
            }
        }
        return violations
    }

    /// The roster a backend rebuilds from the webhooks (deduplicated by `id`, ordered by `seq`,
    /// from the channel's first event) equals the listing; a missing `seq` is reported as lost.
    /// A channel that emptied starts again at `seq` 1: the events are split where that happens,
    /// in the order Redis wrote them (an event's id ends with its stream entry id,
    /// `<ms>-<n>`), and the listing is compared with the last run of the channel; two events
    /// of one run with one `seq` are a finding, named with both. After a data loss some
    /// client saw (``ChaosCluster/dataLossesSeen``) a `seq` may also go back without reaching 1:
    /// Redis went back in time (a failover lost acknowledged writes; the nodes noticed and
    /// closed every session with 1012). The events from there on are a new run that shares the
    /// older run's events below that `seq`, the history both timelines have.
    func checkWebhooks(_ listings: [[String: Listing]]) -> [ChaosViolation] {
        var seen: Set<String> = []
        var written: [String: [(order: [Int], seq: Int, event: JSON)]] = [:]
        for request in cluster.receiver.requests {
            for event in request.events where event["event"]?.stringValue == "presence" {
                guard let id = event["id"]?.stringValue, seen.insert(id).inserted,
                      let channel = event["channel"]?.stringValue, let seq = event["seq"]?.numberValue?.intValue else { continue }
                let entry = id.split(separator: ":").last.map { $0.split(separator: "-").compactMap { Int($0) } } ?? []
                written[channel, default: []].append((entry, seq, event))
            }
        }
        var violations: [ChaosViolation] = []
        for channel in channels {
            guard let listed = listings.lazy.compactMap({ $0[channel] }).first else { continue }
            var runs: [[Int: JSON]] = [[:]]
            var duplicates: [String] = []
            var lastSeq = 0
            let rollbacksPossible = cluster.dataLossesSeen > 0
            for (_, seq, event) in (written[channel] ?? []).sorted(by: { $0.order.lexicographicallyPrecedes($1.order) }) {
                if seq == 1, !runs[runs.count - 1].isEmpty {
                    runs.append([:])
                } else if rollbacksPossible, seq <= lastSeq {
                    runs.append(runs[runs.count - 1].filter { $0.key < seq })
                }
                lastSeq = seq
                if let other = runs[runs.count - 1][seq] {
                    duplicates.append("seq \(seq): \(other.compactString) and \(event.compactString)")
                }
                runs[runs.count - 1][seq] = event
            }
            if !duplicates.isEmpty {
                violations.append(ChaosViolation(invariant: "webhooks", subject: "#\(channel)",
                                                 detail: "two events with different ids carry one seq in one run of the channel: "
                                                     + duplicates.prefix(3).joined(separator: "; "), users: []))
                continue
            }
            let bySeq = runs[runs.count - 1]
            let lost = listed.seq > 0 ? (1...listed.seq).filter { bySeq[$0] == nil } : []
            var roster = RollcallClient.Roster(channel: channel)
            for seq in bySeq.keys.sorted() where seq <= listed.seq {
                if let object = bySeq[seq]?.objectValue { roster.apply(Event(object)) }
            }
            var rebuilt: [String: [String: String]] = [:]
            for member in roster.sortedMembers { rebuilt[member.userId] = member.state }
            if !lost.isEmpty || rebuilt != listed.users {
                let extra = Set(rebuilt.keys).subtracting(listed.users.keys).sorted()
                let missing = Set(listed.users.keys).subtracting(rebuilt.keys).sorted()
                violations.append(ChaosViolation(
                    invariant: "webhooks", subject: "#\(channel)",
                    detail: "rebuilt from \(bySeq.count) events up to seq \(listed.seq): lost seqs \(Self.ranges(lost)); "
                        + "extra \(extra), missing \(missing)\(rebuilt.keys.sorted() == listed.users.keys.sorted() && rebuilt != listed.users ? ", states differ" : "")",
                    users: extra + missing))
            }
        }
        return violations
    }

    /// `[3, 4, 5, 9]` as `3-5, 9`.
    static func ranges(_ numbers: [Int]) -> String {
        var parts: [String] = []
        var index = 0
        while index < numbers.count {
            var end = index
            while end + 1 < numbers.count && numbers[end + 1] == numbers[end] + 1 { end += 1 }
            parts.append(end == index ? "\(numbers[index])" : "\(numbers[index])-\(numbers[end])")
            index = end + 1
        }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}
