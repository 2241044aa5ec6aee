import RollcallCore
import RollcallProtocol

/// This node's side of cluster user status: the session hooks (login, resume, end), the
/// inboxes it hears and the events that come through them, and the expiry sweep.
extension ClusterUserStatus {
    // MARK: - Session hooks

    /// The status command a new login runs right after `session.start`, in the same call:
    /// the user goes `online`, the login's custom status (if not empty) is set without
    /// counting against the rate, platforms are recomputed; it answers the catch-up.
    func startedCommand(_ session: Session, customStatus: String?) -> StoreCommand {
        let custom = customStatus.flatMap { $0.isEmpty ? nil : $0 }
        return UserStatusScripts.started(keys: keys, user: session.userId, session: session.sessionId,
                                         customStatus: custom, ttlMs: ttlMs)
    }

    /// A new session is in the directory and its start command replied `reply`: the node
    /// hears the user's inbox, and the catch-up waits for the login reply (read per key group
    /// first when the script named the targets, ``resolve(_:then:)``).
    func sessionStarted(_ session: Session, reply: StoreReply) {
        hearInbox(of: session.userId)
        noteOwnRecord(in: reply, for: session)
        let catchUp = UserStatusScripts.CatchUp(unwrapped(reply))
        // Read here (one group): known before the login reply; else when the reads answer.
        let readHere = if case .records = catchUp { true } else { false }
        if !readHere { awaitingLoginReply.insert(session.number) }
        resolveCatchUp(catchUp, for: session) { [self] records, versions in
            noteCatchUp(versions, for: session)
            let waiting = awaitingLoginReply.remove(session.number) != nil || readHere
            guard !records.isEmpty else { return }
            let bytes = StatusEvents.userStatus(records)
            if waiting {
                pendingCatchUp[session.number] = bytes
            } else if session.connection != nil {
                outbox.send(bytes, to: session)
            }
        }
    }

    /// The version of the user's own record that the login or resume of `session` wrote (its
    /// script's answer, `reply`) counts as seen by the session: an older one the user's inbox
    /// brings afterwards is not sent to it. The inbox is heard before the session starts, so an
    /// older change another node published late (the `offline` of the user's previous session,
    /// published after Redis answered its end) could reach the new session and tell it that its
    /// own user is offline (`ClusterUserStatusTests`' catch-up test, session 45).
    private func noteOwnRecord(in reply: StoreReply, for session: Session) {
        let own = UserStatusScripts.Changed(reply).announced.compactMap(\.record).filter { $0.user == session.userId.string }
        guard let version = own.map(\.version).max() else { return }
        noteCatchUp([session.userId.string: version], for: session)
    }

    /// After the login reply was queued: the catch-up event of a new login, if it is known
    /// (else it goes out when the reads per key group answer).
    func sessionLoggedIn(_ session: Session) {
        awaitingLoginReply.remove(session.number)
        guard let bytes = pendingCatchUp.removeValue(forKey: session.number) else { return }
        outbox.send(bytes, to: session)
    }

    /// A held session resumed here (it was held here or elsewhere): a non-empty login custom
    /// status may change the record, and the session gets the changes of the longest possible
    /// hold window as its catch-up (as one node), once Redis answers.
    func sessionResumed(_ session: Session, customStatus: String?) {
        hearInbox(of: session.userId)
        let custom = customStatus.flatMap { $0.isEmpty ? nil : $0 }
        let window = max(300, configuration.presence.timeoutSeconds).milliseconds
        let command = UserStatusScripts.resumed(keys: keys, user: session.userId, session: session.sessionId,
                                                customStatus: custom, ttlMs: ttlMs, windowMs: window)
        store.call([command]) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first else { return }
            noteOwnRecord(in: reply, for: session)
            resolveCatchUp(UserStatusScripts.CatchUp(unwrapped(reply)), for: session) { [self] records, versions in
                guard !records.isEmpty, session.connection != nil else { return }
                noteCatchUp(versions, for: session)
                outbox.send(StatusEvents.userStatus(records), to: session)
            }
        }
    }

    /// The status command for a session that ended for good (it runs after the command that
    /// took the session out of Redis): `loggedOut` after logout, else `offline`, when it was
    /// the user's last session; otherwise the platforms may change.
    func endedCommand(user: Name, sessionId: String, loggedOut: Bool) -> StoreCommand {
        UserStatusScripts.ended(keys: keys, user: user, session: sessionId, how: loggedOut ? .logout : .closed,
                                clearCustomStatus: configuration.userStatus.clearCustomStatusOnOffline)
    }

    /// Runs `status.ended` commands; those Redis did not answer (an outage) are sent again at
    /// the next reaper tick (``retryUnansweredEnds()``), so a user whose last session ended
    /// does not stay `online`. The script is idempotent. `then` runs once Redis answered, or
    /// once the commands were put aside for the retry.
    func sendEnds(_ commands: [StoreCommand], then: (() -> Void)? = nil) {
        guard !commands.isEmpty else {
            then?()
            return
        }
        store.call(commands) { [self] result in
            switch result {
            case .failure: unansweredEnds += commands
            case .success(let replies): for reply in replies { _ = unwrapped(reply) }
            }
            then?()
        }
    }

    /// Every reaper tick: the `status.ended` commands an outage left unanswered, again; the
    /// `status.dropSubscriber` ones (``sendDrops(_:then:)``); and the catch-up reads
    /// (``resolve(_:attempt:then:)``).
    func retryUnansweredEnds() {
        let commands = unansweredEnds
        unansweredEnds = []
        sendEnds(commands)
        let drops = unansweredDrops
        unansweredDrops = []
        sendDrops(drops)
        let catchUps = unansweredCatchUps
        unansweredCatchUps = []
        for catchUp in catchUps { catchUp() }
    }

    /// A session left this node (ended, or resumed on another node): after the user's last
    /// local session the node stops hearing the user's inbox.
    func sessionLeftNode(_ session: Session) {
        pendingCatchUp[session.number] = nil
        awaitingLoginReply.remove(session.number)
        catchUpVersions[session.number] = nil
        stopHearingIfUnused(session.userId)
    }

    /// Stops hearing the user's inbox when this node has no session of the user (a login
    /// that failed, or the last local session gone).
    func stopHearingIfUnused(_ user: Name) {
        let channel = inboxChannel(of: user)
        guard directory.sessions(of: user).isEmpty, inboxes.removeValue(forKey: channel) != nil else { return }
        inboxVersions[channel] = nil
        store.unlisten(String(decoding: channel, as: UTF8.self))
    }

    /// Every local session was dropped (Redis lost the data, or this node was fenced): every
    /// inbox goes quiet.
    func forgetLocalSessions() {
        for channel in inboxes.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            store.unlisten(String(decoding: channel, as: UTF8.self))
        }
        inboxes.removeAll()
        inboxVersions.removeAll()
        pendingCatchUp.removeAll()
        awaitingLoginReply.removeAll()
        catchUpVersions.removeAll()
        heardWhileCatchingUp.removeAll()
        unansweredCatchUps.removeAll()
    }

    /// The sweep of key group `group` (``UserStatusScripts/sweep``).
    func sweepCommand(group: Int) -> StoreCommand {
        UserStatusScripts.sweep(keys: keys, group: group, limit: 100)
    }

    /// The sweeps of `groups` answered (`replies` in their order): the custom statuses they
    /// cleared go to the subscribers, and each group's count of unexpired subscriptions is kept.
    func sweepAnswered(groups: [Int], replies: [StoreReply]) {
        for (group, reply) in zip(groups, replies) {
            if case .integer(let count) = unwrapped(reply) { subscriptionsByGroup[group] = Int(count) }
        }
    }

    /// The cluster's unexpired subscriptions as this node's sweeps counted them, once they
    /// have counted every key group (nil before: this node does not scan, or only began).
    var sweptSubscriptions: Int? {
        subscriptionsByGroup.count >= keys.groups.count ? subscriptionsByGroup.values.reduce(0, +) : nil
    }

    /// This node does not scan (another holds the lease): its counts would go stale, so it
    /// forgets them and reports none.
    func stopSweeping() {
        subscriptionsByGroup.removeAll()
    }

    /// The reaper's tick was answered: Redis is reachable (a resync looks back to here), and
    /// the cluster's subscriptions are `subscriptions` (the scanner's count).
    func reaperTickAnswered(subscriptions: Int) {
        lastSweptAt = clock.now
        subscriptionsInCluster = subscriptions
    }

    /// The pub/sub link came back after a loss: inbox messages published meanwhile are gone,
    /// so every local session gets one `userStatus` event with the records of its user and of
    /// its targets that changed since the link may have gone down (at least the longest hold
    /// window, as a resume; records are whole states, a repeat is harmless).
    func linkRestored() {
        let users = Set(inboxes.values).sorted()
        guard !users.isEmpty else { return }
        let outage = lastSweptAt.map { clock.now - $0 } ?? 0
        let window = max(max(300, configuration.presence.timeoutSeconds).milliseconds,
                         outage + 2 * configuration.cluster.nodeTimeoutSeconds.milliseconds)
        for group in UsersByGroup(users, groupOf: keys.userGroup).groups {
            var start = 0
            while start < group.users.count {
                let chunk = Array(group.users[start..<min(group.users.count, start + 100)])
                start += 100
                store.call([UserStatusScripts.resync(keys: keys, windowMs: window, users: chunk)]) { [self] result in
                    guard case .success(let replies) = result, let elements = unwrapped(replies.first ?? .null).elements else { return }
                    for (user, reply) in zip(chunk, elements) {
                        let own = UserStatusScripts.record(reply[0])
                        resolve(UserStatusScripts.CatchUp(reply[1])) { [self] targets, _ in
                            let records = (own.map { [$0] } ?? []) + targets
                            guard !records.isEmpty else { return }
                            let bytes = StatusEvents.userStatus(records.sorted { $0.stored.userId < $1.stored.userId })
                            outbox.fanOut {
                                for session in directory.sessions(of: user) { outbox.send(bytes, to: session) }
                            }
                        }
                    }
                }
            }
        }
    }

    // MARK: - Inboxes

    /// `P{<g>}uu:<n>:<user>` (``ClusterKeys/inbox(of:)``).
    func inboxChannel(of user: Name) -> [UInt8] { Array(keys.inbox(of: user).utf8) }

    /// True when `channel` is a user's inbox (``deliver(channel:payload:)`` handles it).
    func isInbox(_ channel: [UInt8]) -> Bool { keys.isInbox(channel) }

    /// Starts hearing the user's inbox (once; a no-op while heard).
    func hearInbox(of user: Name) {
        let channel = inboxChannel(of: user)
        guard inboxes[channel] == nil else { return }
        inboxes[channel] = user
        store.listen(String(decoding: channel, as: UTF8.self))
    }

    /// Publishes ready event bytes to every session of `user` (on every node) but `except`.
    func tell(_ user: Name, _ bytes: [UInt8], except: String) {
        let payload = [UInt8(ascii: "E")] + Array(except.utf8) + [UInt8(ascii: "\n")] + bytes
        store.call([publishCommand(payload, to: user)]) { _ in }
    }

    /// Publishes the changes a script answered to the inbox of each of their recipients, in
    /// one store call (pipelined; nothing when there are none). Nobody checks that they arrive:
    /// docs/cluster.md, "Delivery", says what makes up for a lost one.
    func publish(_ announcements: [UserStatusScripts.Announcement]) {
        let commands = announcements.flatMap { announcement in
            announcement.recipients.map { publishCommand(announcement.payload, to: $0) }
        }
        guard !commands.isEmpty else { return }
        store.call(commands) { _ in }
    }

    /// `PUBLISH <inbox> <payload>`: a routable publish (``StoreRoute``: `SPUBLISH` to the
    /// master of the inbox's slot on Redis Cluster, `PUBLISH` on one Redis).
    private func publishCommand(_ payload: [UInt8], to user: Name) -> StoreCommand {
        .command([storeArgument("PUBLISH"), inboxChannel(of: user), payload])
    }

    /// A message in a user's inbox: a record (`U<except>\n<version>\n<user>\n<status>\n<lu>\n
    /// <lo>\n<lc>\n<platforms>\n<custom>`) or ready event bytes (`E<except>\n<bytes>`), for this
    /// node's sessions of that user but the session `except`. A record of a version this inbox
    /// already brought, or of an older one, is dropped: changes published by two nodes arrive
    /// in either order, and a publish may come twice; the newest stays (docs/cluster.md, "Delivery").
    func deliver(channel: [UInt8], payload: [UInt8]) {
        guard let user = inboxes[channel], let kind = payload.first else { return }
        let newline = UInt8(ascii: "\n")
        let except: String
        let bytes: [UInt8]
        var recordUser: String?, recordVersion: Int64 = 0
        switch kind {
        case UInt8(ascii: "U"):
            let fields = payload.dropFirst().split(separator: newline, maxSplits: 8, omittingEmptySubsequences: false)
            guard fields.count == 9, let version = Int64(String(decoding: fields[1], as: UTF8.self)) else { return }
            func text(_ index: Int) -> String { String(decoding: fields[index], as: UTF8.self) }
            func time(_ index: Int) -> Int64 { Int64(text(index)) ?? 0 }
            guard isNewer(version, of: text(2), in: channel) else { return }
            let custom = fields[8].first == UInt8(ascii: "=") ? String(decoding: fields[8].dropFirst(), as: UTF8.self) : nil
            except = text(0)
            recordUser = text(2)
            recordVersion = version
            bytes = StatusEvents.userStatus([UserStatusScripts.record(user: text(2), status: text(3), times: (time(4), time(5), time(6)),
                                                         platforms: text(7), customStatus: custom)])
        case UInt8(ascii: "E"):
            let fields = payload.dropFirst().split(separator: newline, maxSplits: 1, omittingEmptySubsequences: false)
            guard fields.count == 2 else { return }
            except = String(decoding: fields[0], as: UTF8.self)
            bytes = Array(fields[1])
        default:
            return
        }
        outbox.fanOut {
            for session in directory.sessions(of: user) where session.sessionId != except {
                // A session whose catch-up brought this version already has it.
                if let recordUser {
                    if caughtUp(session, with: recordUser, at: recordVersion) { continue }
                    noteHeardWhileCatchingUp(session, user: recordUser, version: recordVersion)
                }
                outbox.send(bytes, to: session)
            }
        }
    }

    /// True when `version` of `user`'s record is newer than any this inbox brought; it is
    /// remembered then.
    private func isNewer(_ version: Int64, of user: String, in channel: [UInt8]) -> Bool {
        if let seen = inboxVersions[channel]?[user], seen >= version { return false }
        inboxVersions[channel, default: [:]][user] = version
        return true
    }
}
