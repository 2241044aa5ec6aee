import RollcallCore

/// Catch-ups over key groups: a session's scripts (`status.started`, `resumed`, `resync`) run
/// on its user's slot, and with one key group they read the targets' records there too. With
/// more groups a target's record may be in another group's slot, so they answer the targets
/// instead (``UserStatusScripts/CatchUp``) and the node reads them here, one
/// `status.changedSince` per key group of the targets, sent in one store call.
extension ClusterUserStatus {
    /// Times a catch-up read is sent before it is given up.
    static let catchUpReadAttempts = 10

    /// The records of `catchUp`, ordered by user id: at once when the script read them, else
    /// once every group answered. A read Redis did not answer (the link busy or down) is sent
    /// again at the next reaper tick, up to ``catchUpReadAttempts`` times in all; then the
    /// session gets none, and the loss is counted (`rollcall_cluster_catch_ups_lost_total`): a
    /// catch-up is best effort (the events that follow are whole records; a resume's catch-up
    /// was already so).
    func resolve(_ catchUp: UserStatusScripts.CatchUp, attempt: Int = 1,
                 then done: @escaping (_ records: [UserStatusRecord], _ versions: [String: Int64]) -> Void) {
        guard case .targets(let since, let targets) = catchUp else {
            if case .records(let records, let versions) = catchUp { done(records, versions) }
            return
        }
        let byGroup = UsersByGroup(targets, groupOf: keys.userGroup)
        guard !byGroup.groups.isEmpty else { return done([], [:]) }
        let commands = byGroup.groups.map { UserStatusScripts.changedSince(keys: keys, since: since, targets: $0.users) }
        store.call(commands) { [self] result in
            guard case .success(let replies) = result else {
                guard attempt < Self.catchUpReadAttempts else {
                    broker.metrics.clusterCatchUpsLost += 1
                    return done([], [:])
                }
                unansweredCatchUps.append { [self] in resolve(catchUp, attempt: attempt + 1, then: done) }
                return
            }
            var records: [UserStatusRecord] = [], versions: [String: Int64] = [:]
            for reply in replies {
                if case .error = reply { continue }
                let result = unwrapped(reply)
                records += UserStatusScripts.catchUp(result)
                versions.merge(UserStatusScripts.versions(result)) { max($0, $1) }
            }
            done(records.sorted { $0.stored.userId < $1.stored.userId }, versions)
        }
    }

    /// ``resolve(_:attempt:then:)`` for `session`'s own catch-up, leaving out what the user's
    /// inbox delivered to the session while the reads per key group were out (a record of the
    /// same or an older version): a change published as the session started reached it by the
    /// inbox first, then came again in the catch-up (`UserStatusTests`' catch-up on a Redis
    /// Cluster saw two events, session 46). The other order is ``caughtUp(_:with:at:)``'s.
    func resolveCatchUp(_ catchUp: UserStatusScripts.CatchUp, for session: Session,
                        then done: @escaping (_ records: [UserStatusRecord], _ versions: [String: Int64]) -> Void) {
        heardWhileCatchingUp[session.number] = heardWhileCatchingUp[session.number] ?? [:]
        resolve(catchUp) { [self] records, versions in
            let heard = heardWhileCatchingUp.removeValue(forKey: session.number) ?? [:]
            let news = records.filter { record in
                let user = record.stored.userId.string
                guard let seen = heard[user], let version = versions[user] else { return true }
                return version > seen
            }
            done(news, versions)
        }
    }

    /// The inbox delivered `user`'s record at `version` to `session`: noted while its catch-up
    /// reads are out (``resolveCatchUp(_:for:then:)``).
    func noteHeardWhileCatchingUp(_ session: Session, user: String, version: Int64) {
        guard heardWhileCatchingUp[session.number] != nil else { return }
        heardWhileCatchingUp[session.number]![user] = max(heardWhileCatchingUp[session.number]![user] ?? 0, version)
    }

    /// A catch-up with these record versions went to `session` (or waits for its login
    /// reply): the same versions, brought again by the user's inbox, are not sent to it.
    func noteCatchUp(_ versions: [String: Int64], for session: Session) {
        guard !versions.isEmpty else { return }
        catchUpVersions[session.number, default: [:]].merge(versions) { max($0, $1) }
    }

    /// Whether the inbox record of `user` at `version` already reached `session` in its
    /// catch-up (a newer one clears the note: it can only be news).
    func caughtUp(_ session: Session, with user: String, at version: Int64) -> Bool {
        guard let seen = catchUpVersions[session.number]?[user] else { return false }
        if version > seen { catchUpVersions[session.number]?[user] = nil }
        return version <= seen
    }
}
