import Foundation
import RollcallClient
import RollcallProtocol

/// One presence channel across every node for the outage and failover timelines: a watcher on
/// each node keeping a roster, and members spread round-robin over the nodes. Notes every
/// session the broker closed (a lost session: fenced, or 1012 after a data loss).
final class WatchedChannel: @unchecked Sendable {
    let channel: String
    let watchers: SpreadSessions
    let members: SpreadSessions
    private let rosters: [WatchedRoster]
    private let lock = NSLock()
    private var closedByBroker: [String: String] = [:]
    private var closingOurselves = false
    private var closedByUs: Set<String> = []

    /// Logs in and joins one watcher per node and `memberCount` members; throws unless every
    /// join succeeded and every watcher's roster lists everyone within 10 s.
    init(group: NodeGroup, channel: String, memberCount: Int) throws {
        self.channel = channel
        let nodeCount = group.nodes.count
        let rosters = (0..<nodeCount).map { _ in WatchedRoster(channel: channel) }
        self.rosters = rosters
        var closeHandler: ((String, CloseInfo) -> Void)?
        let noteClose: (String, CloseInfo) -> Void = { closeHandler?($0, $1) }
        watchers = try SpreadSessions(urls: group.urls, count: nodeCount, label: "watchers", userId: { "watcher-\($0)" }) { index, connection in
            connection.onEvent = { rosters[index].apply($0) }
            connection.onClose = { noteClose("watcher-\(index)", $0) }
        }
        members = try SpreadSessions(urls: group.urls, count: memberCount, label: "members", userId: { "member-\($0)" }) { index, connection in
            connection.onClose = { noteClose("member-\(index)", $0) }
        }
        closeHandler = { [unowned self] user, info in
            lock.withLock { if !closingOurselves, !closedByUs.contains(user) { closedByBroker[user] = info.description } }
        }
        let join: (Int) -> JSON = { [channel] _ in ["channel": .string(channel), "presence": true, "messages": false] }
        let joinedWatchers = watchers.requestAll("join", Array(0..<nodeCount), timeout: 10, arguments: join)
        let joinedMembers = members.requestAll("join", Array(0..<memberCount), timeout: 30, arguments: join)
        guard joinedWatchers.failed + joinedMembers.failed == 0 else {
            shutdown()
            throw StormError("\(channel): \(joinedWatchers.failed + joinedMembers.failed) joins failed")
        }
        let ready = MonotonicSeconds.now + 10
        while rosters.contains(where: { $0.count < nodeCount + memberCount }), MonotonicSeconds.now < ready { usleep(20_000) }
        guard rosters.allSatisfy({ $0.count == nodeCount + memberCount }) else {
            shutdown()
            throw StormError("\(channel): the watchers' rosters never listed all \(nodeCount + memberCount)")
        }
    }

    /// Closes the connections of the first `count` members (code 1000): they leave the true membership.
    func closeMembers(_ count: Int) {
        for index in 0..<count {
            lock.withLock { _ = closedByUs.insert("member-\(index)") }
            members.sessions[index].close(code: 1000)
        }
    }

    /// Every user that was joined and whose session neither the broker nor ``closeMembers(_:)`` closed.
    func expectedUsers(extra: Set<String> = []) -> Set<String> {
        var users = Set((0..<watchers.sessions.count).map { "watcher-\($0)" })
        users.formUnion((0..<members.sessions.count).map { "member-\($0)" })
        users.formUnion(extra)
        return lock.withLock { users.subtracting(closedByBroker.keys).subtracting(closedByUs) }
    }

    /// Sessions the broker closed, with how.
    var lost: [String: String] { lock.withLock { closedByBroker } }

    /// True when every watcher's roster equals `getOnlineUsers` asked on its own connection,
    /// and, when given, `expected`.
    func converged(expected: Set<String>?) -> Bool {
        for (index, roster) in rosters.enumerated() {
            guard expected == nil || roster.userIds == expected, let listed = onlineUsers(asking: index),
                  listed == roster.userIds else { return false }
        }
        return true
    }

    /// What `getOnlineUsers` answers on watcher `index`'s connection (nil: no answer or an error).
    func onlineUsers(asking index: Int) -> Set<String>? {
        guard let page = try? watchers.sessions[index].call(Op.getOnlineUsers.rawValue,
                                                            ["channel": .string(channel), "pageSize": 1000],
                                                            timeout: .seconds(1)) else { return nil }
        return Set((page["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
    }

    /// Each watcher's roster against `expected`: what is missing and extra (for the facts).
    func differences(from expected: Set<String>) -> String {
        rosters.enumerated().compactMap { index, roster in
            let mine = roster.userIds
            guard mine != expected else { return nil }
            return "watcher on \(NodeWatch.label(index)): missing \(expected.subtracting(mine).sorted()), extra \(mine.subtracting(expected).sorted())"
        }.joined(separator: "; ")
    }

    func shutdown() {
        lock.withLock { closingOurselves = true }
        members.shutdown()
        watchers.shutdown()
    }
}
