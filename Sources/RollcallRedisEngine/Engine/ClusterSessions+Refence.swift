import RollcallCore

/// The fence copies of a session's channels after a claim, a hold or an orphaning changed who
/// owns it (docs/cluster.md, "Where the build stands", step 1). With one key group the session
/// scripts change them in the same script; with more, the channels are in other slots and the
/// node sends each one `presence.refence` after the answer: a claim before it answers the
/// resume, a hold before it publishes `held`, an orphaning right after the reaper's answer.
extension ClusterSessions {
    /// Whether the node refences channels itself (more than one key group).
    var refencesChannels: Bool { keys.groups.count > 1 }

    /// `presence.refence` of `sessionId` in each of `channels`: `owner` (`''`: none), held or
    /// live; `kept`: what happens to the messages each channel kept for it.
    /// `from`: the node the copies must still name (else the channel is left as it is: a claim
    /// elsewhere came first); `''` for a claim's, which takes the session whoever had it.
    func refence(_ sessionId: String, in channels: [ChannelKey], owner: String, held: Bool, from: String,
                 kept: PresenceScripts.KeptMessagesStep = .leave, then done: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        guard !channels.isEmpty else { return done(.success([])) }
        call(channels.map {
            PresenceScripts.refence(channelBase: keys.channel($0).base, session: sessionId, owner: owner, held: held, from: from, kept: kept)
        }, then: done)
    }

    /// As ``refence(_:in:owner:held:then:)``, sent again at each reaper tick until Redis
    /// answers (each counted: ``BrokerMetrics/clusterRefencesUnanswered``); the script is
    /// idempotent. `then` runs once it was answered.
    func refenceUntilAnswered(_ sessionId: String, in channels: [ChannelKey], owner: String, held: Bool, from: String,
                              kept: PresenceScripts.KeptMessagesStep = .leave, then: (() -> Void)? = nil) {
        refence(sessionId, in: channels, owner: owner, held: held, from: from, kept: kept) { [self] result in
            switch result {
            case .success: then?()
            case .failure:
                broker.metrics.clusterRefencesUnanswered += 1
                unfinishedEnds.append { [self] in
                    refenceUntilAnswered(sessionId, in: channels, owner: owner, held: held, from: from, kept: kept, then: then)
                }
            }
        }
    }

    /// Sessions this node's hand-over made held with no node: their fence copies become `''`.
    func refenceHandedOver(_ orphaned: [ReapScriptReply.Orphan]) {
        for session in orphaned { refenceUntilAnswered(session.sessionId, in: session.channels, owner: "", held: true, from: nodeId) }
    }

    /// Sessions the reaper orphaned in key group `group` (``ReapScriptReply/orphaned``): their
    /// fence copies become `''` where they still name the dead node, then Redis' log of them is
    /// told (`session.refenced`). Not sent again on failure: the log answers them at the next
    /// `session.reapGroup`, which the scanner runs for every group while a node is being reaped.
    func refenceReaped(_ orphaned: [ReapScriptReply.Orphan], group: Int) {
        for session in orphaned {
            refence(session.sessionId, in: session.channels, owner: "", held: true, from: session.node) { [self] result in
                guard case .success = result else { return broker.metrics.clusterRefencesUnanswered += 1 }
                call([SessionScripts.refenced(keys: keys, group: group, node: session.node, sessionIds: [session.sessionId])]) { _ in }
            }
        }
    }
}
