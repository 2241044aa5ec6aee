import RollcallCore
import RollcallProtocol

/// Per-key TTLs in cluster mode (PROTOCOL §4, 1.1): deadlines live in Redis (Redis' clock);
/// the node that set a member's keys arms a local timer for the earliest one and, when it
/// fires, removes the keys that are due with one `stateChanged`, as one node would. Any node
/// picks up members whose keys are overdue by more than a second (their node stopped).
extension ClusterPresence {
    /// Arms the local timer of a member's earliest deadline (`earliest` and Redis' `now` in ms).
    func scheduleExpiry(_ key: ChannelKey, _ user: Name, earliest: StoreReply, dueAndNow: StoreReply) {
        let member = ExpiringMember(channel: key, user: user)
        guard let deadline = earliest.integer, deadline > 0, let now = dueAndNow[1].integer else {
            expiries.cancel(member)
            return
        }
        expiries.schedule(member, at: clock.monotonic + max(0, deadline - now))
    }

    /// Expires the members whose timers are due.
    func fireDueExpiries() {
        for member in expiries.popDue(now: clock.monotonic) { expire(member, attempt: 1) }
    }

    /// Removes the member's keys that are due by Redis' clock (never before their deadline).
    func expire(_ member: ExpiringMember, attempt: Int) {
        let channelKeys = keys.channel(member.channel)
        let user = member.user
        store.call([PresenceScripts.readExpiries(channelArguments(member.channel, channelKeys, intervalHead: false), user: user)]) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first, let now = reply[0].integer else {
                // Unreachable store: try again shortly.
                expiries.schedule(member, at: clock.monotonic + 250)
                return
            }
            guard let current = reply[1].bytes, !current.isEmpty, var state = PresenceState(stored: current) else { return }
            let flat = reply[2].elements ?? []
            var due: [(String, Int64)] = []
            var earliest: Int64?
            var index = 0
            while index + 1 < flat.count {
                if let stateKey = flat[index].text, let deadline = flat[index + 1].integer {
                    if deadline <= now { due.append((stateKey, deadline)) } else { earliest = min(earliest ?? deadline, deadline) }
                }
                index += 2
            }
            guard !due.isEmpty else {
                if let earliest { expiries.schedule(member, at: clock.monotonic + max(0, earliest - now)) }
                return
            }
            for (stateKey, _) in due { state.remove(stateKey) }
            let change = PresenceScripts.setState(
                channelArguments(member.channel, channelKeys, intervalHead: false), user: user, expected: current, newState: state.encoded,
                head: PresenceEvents.head("stateChanged", channel: member.channel, publisher: user, state: state),
                encodedName: PresenceEvents.encodedName(user), owner: nil, ttl: due.map { .expired($0.0, $0.1) })
            store.call([change]) { [self] result in
                guard case .success(let replies) = result, let reply = replies.first else {
                    expiries.schedule(member, at: clock.monotonic + 250)
                    return
                }
                let decoded = StateScriptReply(reply)
                switch decoded.outcome {
                case .ok:
                    scheduleFlush(member.channel, dueAndNow: decoded.dueAndNow)
                    scheduleExpiry(member.channel, user, earliest: decoded.earliestExpiry, dueAndNow: decoded.dueAndNow)
                case .retry where attempt < Self.maxAttempts:
                    expire(member, attempt: attempt + 1)
                default:
                    return
                }
            }
        }
    }

    /// Members whose keys are overdue by more than a second anywhere in the cluster (the node
    /// that set them stopped): expired by this node, at most 100 per group's bucket
    /// (`P{<g>}due:ttl`) per tick, one script per group of `groups` (the reaper's slice of this
    /// tick: every group within ``ClusterSessions/reapRoundSeconds``).
    func expireOverdue(groups: [Int], ifFailed failed: @escaping () -> Void = {}) {
        call(groups: groups, priority: .background, { PresenceScripts.overdueExpiries(set: keys.dueExpiries(group: $0), limit: 100) }) { [self] result in
            guard case .success(let replies) = result else { return failed() }
            for entry in replies.flatMap({ $0.elements ?? [] }) {
                guard let bytes = entry.bytes, let newline = bytes.firstIndex(of: UInt8(ascii: "\n")),
                      let channel = ClusterKeys.channel(fromId: String(decoding: bytes[..<newline], as: UTF8.self)) else { continue }
                let user = Name(unchecked: String(decoding: bytes[(newline + 1)...], as: UTF8.self))
                expire(ExpiringMember(channel: channel, user: user), attempt: 1)
            }
        }
    }
}
