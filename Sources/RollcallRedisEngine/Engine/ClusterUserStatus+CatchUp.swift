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
