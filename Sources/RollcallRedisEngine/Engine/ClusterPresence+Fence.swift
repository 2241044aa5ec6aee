import RollcallCore

/// Fencing in a channel's slot (docs/cluster.md, "Where the build stands", step 1): a
/// session's fence copy in each channel it joined decides whether a node may act for it there.
/// When the session's record and indexes (`s:`, `sc:`, `uc:`) are in the channel's key group
/// (always with one group) the channel scripts read and write them as before, in one round
/// trip; when they are in another, the node runs their part on the user's slot
/// (`presence.userSide`): before a first join or a state change with no copy, after a leave.
extension ClusterPresence {
    /// Whether `user`'s keys are in the key group (and slot) of `channelKeys`.
    func userSharesSlot(_ user: Name, with channelKeys: ClusterKeys.ChannelKeys) -> Bool {
        keys.userGroup(user) == channelKeys.groupNumber
    }

    /// The session's record for a channel script: its key when it shares the channel's slot,
    /// `''` when not (the script then answers `first` when it has no fence copy).
    func recordInSlot(_ user: Name, session sessionId: String, _ channelKeys: ClusterKeys.ChannelKeys) -> String {
        userSharesSlot(user, with: channelKeys) ? keys.user(user).session(sessionId).record : ""
    }

    /// The indexes a channel script keeps: all of them when the user's share its slot; else
    /// only the channel's group's list of channels (the user's follow, ``followLeave(of:session:from:reply:)``).
    func channelSideIndexes(_ user: Name, session sessionId: String, _ channelKeys: ClusterKeys.ChannelKeys) -> PresenceScripts.MembershipIndexes {
        let all = membershipIndexes(user, session: sessionId, channelKeys)
        guard !userSharesSlot(user, with: channelKeys) else { return all }
        return PresenceScripts.MembershipIndexes(userChannels: "", allChannels: all.allChannels, channelEntry: all.channelEntry,
                                                 sessionChannels: "")
    }

    /// The answer to a change Redis fenced for session `sessionId` of `user` (``fenced(_:)``),
    /// and a check that the session is still this node's. Most often this node was declared
    /// dead and its next beat tells it (every session then closes with 1001). But the record
    /// can also leave this node behind its back while the node stays live — Redis went back in
    /// time by less than a node timeout, or a hand-over ran late — and then nothing else ever
    /// tells it: every change of the session would be refused for good (chaos seeds
    /// 98424072667413 and 195631305256251, docs/testing.md). So the node reads the record, and
    /// when it is gone or names another node or none, the session ends here without a word to
    /// Redis (``onSessionNoLongerHere``): the client resumes where the session is, or logs in
    /// afresh. One read per session at a time.
    func fencedAnswer(sessionId: String, user: Name) -> BrokerError {
        if ownershipChecks.insert(sessionId).inserted {
            let record = keys.user(user).session(sessionId).record
            store.call([.command(["HGET", record, "node"].map(storeArgument))]) { [self] result in
                ownershipChecks.remove(sessionId)
                guard case .success(let replies) = result, let reply = replies.first else { return }
                let owner: String? = switch reply {
                case .bulk(let bytes): String(decoding: bytes, as: UTF8.self)
                case .null: nil
                default: nodeId
                }
                guard owner != nodeId, let session = broker.directory.session(id: sessionId) else { return }
                broker.metrics.clusterSessionsLostByNode += 1
                onSessionNoLongerHere?(session, owner)
            }
        }
        return Self.fenced(configuration)
    }

    /// Checks on the user's slot that this node owns `user`'s session `sessionId` (`step`
    /// `.check`, or `.join`: with the user's indexes), after a channel answered `first`.
    /// Fails `fenced` when another node owns it.
    func checkOwner(_ user: Name, session sessionId: String, channelKeys: ClusterKeys.ChannelKeys, step: PresenceScripts.UserSideStep,
                    then done: @escaping (Result<Void, BrokerError>) -> Void) {
        let command = PresenceScripts.userSide(step, sessionRecord: keys.user(user).session(sessionId).record, node: nodeId,
                                               indexes: membershipIndexes(user, session: sessionId, channelKeys), channelId: channelKeys.id)
        runScript(command) { [self] result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let reply):
                switch ScriptOutcome(reply) {
                case .ok: done(.success(()))
                case .fenced: done(.failure(fencedAnswer(sessionId: sessionId, user: user)))
                default: done(.failure(Self.unexpected(reply)))
                }
            }
        }
    }

    /// After `presence.leave` answered `reply` for `user`'s session `sessionId` in `key`: when
    /// the user's indexes are in another slot, the session's (and, when the user left the
    /// channel, the user's) lose the channel there. Sent until Redis answers (idempotent).
    /// `then` runs once Redis answered the first try (or at once when there is nothing to
    /// send): a client's `leave` answers then, so `getUserChannels` on any node after the
    /// answer no longer lists the channel.
    func followLeave(of user: Name, session sessionId: String, from key: ChannelKey, reply: StoreReply, then: (() -> Void)? = nil) {
        let channelKeys = keys.channel(key)
        guard !userSharesSlot(user, with: channelKeys), ScriptOutcome(reply) == .ok else {
            then?()
            return
        }
        let step: PresenceScripts.UserSideStep = reply[2].integer == 1 ? .leaveUser : .leaveSession
        sendUserSteps([PresenceScripts.userSide(step, sessionRecord: keys.user(user).session(sessionId).record, node: "",
                                                indexes: membershipIndexes(user, session: sessionId, channelKeys), channelId: channelKeys.id)],
                      then: then)
    }

    /// Runs steps on users' slots; those Redis did not answer are counted and sent again at
    /// the next reaper tick. `then` runs after the first answer, whatever it was.
    func sendUserSteps(_ commands: [StoreCommand], then: (() -> Void)? = nil) {
        guard !commands.isEmpty else {
            then?()
            return
        }
        store.call(commands) { [self] result in
            if case .failure = result {
                broker.metrics.clusterUserStepsUnanswered += commands.count
                unansweredUserSteps += commands
            }
            then?()
        }
    }

    /// Every reaper tick: the user steps an outage left unanswered, again.
    func retryUnansweredUserSteps() {
        let commands = unansweredUserSteps
        unansweredUserSteps = []
        sendUserSteps(commands)
    }
}
