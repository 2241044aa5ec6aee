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
    func refence(_ sessionId: String, in channels: [ChannelKey], owner: String, held: Bool,
                 kept: PresenceScripts.KeptMessagesStep = .leave, then done: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        guard !channels.isEmpty else { return done(.success([])) }
        call(channels.map { PresenceScripts.refence(channelBase: keys.channel($0).base, session: sessionId, owner: owner, held: held, kept: kept) },
             then: done)
    }

    /// As ``refence(_:in:owner:held:then:)``, sent again at each reaper tick until Redis
    /// answers (each counted: ``BrokerMetrics/clusterRefencesUnanswered``); the script is
    /// idempotent. `then` runs once it was answered.
    func refenceUntilAnswered(_ sessionId: String, in channels: [ChannelKey], owner: String, held: Bool,
                              kept: PresenceScripts.KeptMessagesStep = .leave, then: (() -> Void)? = nil) {
        refence(sessionId, in: channels, owner: owner, held: held, kept: kept) { [self] result in
            switch result {
            case .success: then?()
            case .failure:
                broker.metrics.clusterRefencesUnanswered += 1
                unfinishedEnds.append { [self] in refenceUntilAnswered(sessionId, in: channels, owner: owner, held: held, kept: kept, then: then) }
            }
        }
    }

    /// Sessions an orphaning made held with no node (the reaper's, or this node's hand-over):
    /// their fence copies become `''`.
    func refenceOrphans(_ orphaned: [(sessionId: String, channels: [ChannelKey])]) {
        for session in orphaned { refenceUntilAnswered(session.sessionId, in: session.channels, owner: "", held: true) }
    }
}
