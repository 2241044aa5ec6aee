@testable import RollcallClient
import RollcallProtocol
import Testing

/// `ChannelIntents`: the app's channels, joins owed, retries and rejoins, on plain numbers.
@Suite struct ChannelIntentsTests {
    private let a = ChannelRef("a"), b = ChannelRef("b"), c = ChannelRef("c")
    private let joined = JoinResult(occupancy: 1, mode: .announce)

    private func intents() -> ChannelIntents { ChannelIntents(reconnect: ReconnectPolicy(initialDelay: 0.1, maxDelay: 1)) }

    private func error(_ code: ErrorCode, retryAfterMs: Int? = nil) -> RollcallError {
        .server(code: code, codeText: code.rawValue, message: "", retryAfterMs: retryAfterMs)
    }

    @Test("online: a join is sent at once; its success is joined and resolves the app's call")
    func joinOnline() {
        var channels = intents()
        #expect(channels.join(Requests.Join(a), online: 1, now: 0) == [.status(a, .joining), .sendJoin(a, link: 1)])
        #expect(channels.joinAnswered(a, link: 1, result: .success(joined), now: 0) == [.status(a, .joined), .joined(a, joined)])
        #expect(channels.entries[a]?.status == .joined)
        #expect(channels.joinAnswered(a, link: 1, result: .success(joined), now: 0).isEmpty, "an answer nobody waits for")
    }

    @Test("RATE_LIMITED is retried after the reply's retryAfterMs, shown as retrying; without one, after the backoff")
    func rateLimitedIsRetried() {
        var channels = intents()
        _ = channels.join(Requests.Join(a), online: 1, now: 0)
        let limited = error(.rateLimited, retryAfterMs: 750)
        #expect(channels.joinAnswered(a, link: 1, result: .failure(limited), now: 10)
            == [.status(a, .retrying(after: 0.75, error: limited)), .scheduleRetry(a, at: 10.75)])
        #expect(channels.retryTimerFired(a, link: 1, now: 10.75) == [.status(a, .joining), .sendJoin(a, link: 1)])
        let unavailable = error(.unavailable)
        let actions = channels.joinAnswered(a, link: 1, result: .failure(unavailable), now: 20)
        guard case .status(_, .retrying(let after, _)) = actions.first else { Issue.record("\(actions)"); return }
        #expect(after >= 0.1 && after <= 0.2, "backoff attempt 1: \(after)")
        #expect(channels.retryTimerFired(a, link: nil, now: 21) == [.status(a, .joining)], "offline: sent after the next login")
    }

    @Test("a refusal of the app's own join is the app's (its call throws, the channel goes); of a rejoin, kept as failed")
    func refusals() {
        var channels = intents()
        _ = channels.join(Requests.Join(a), online: 1, now: 0)
        let forbidden = error(.forbidden)
        #expect(channels.joinAnswered(a, link: 1, result: .failure(forbidden), now: 0) == [.refused(a, forbidden), .removed(a)])
        #expect(channels.entries[a] == nil)

        _ = channels.join(Requests.Join(b), online: 1, now: 0)
        _ = channels.joinAnswered(b, link: 1, result: .success(joined), now: 0)
        _ = channels.restore(link: 2, resumed: false, channels: [], now: 1)
        let tooMany = error(.tooManyChannels)
        #expect(channels.joinAnswered(b, link: 2, result: .failure(tooMany), now: 1) == [.status(b, .failed(tooMany))])
        #expect(channels.entries[b] != nil, "kept, never dropped silently")
        #expect(channels.restore(link: 3, resumed: false, channels: [], now: 2) == [.status(b, .joining), .sendJoin(b, link: 3)],
                "tried again after the next login")
    }

    @Test("a join cut by a lost link stays joining and is sent after the next login")
    func cutJoins() {
        var channels = intents()
        _ = channels.join(Requests.Join(a), online: 1, now: 0)
        channels.linkLost(1)
        let closed = RollcallError.connection(.closed(CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true)))
        #expect(channels.joinAnswered(a, link: 1, result: .failure(closed), now: 0).isEmpty)
        #expect(channels.entries[a]?.status == .joining)
        #expect(channels.restore(link: 2, resumed: false, channels: [], now: 1) == [.status(a, .joining), .sendJoin(a, link: 2)])
    }

    @Test("offline: joins wait for the login, the last call wins; a leave removes at once")
    func offlineIntent() {
        var channels = intents()
        #expect(channels.join(Requests.Join(a, state: ["k": "1"]), online: nil, now: 0) == [.status(a, .joining)])
        _ = channels.join(Requests.Join(a, state: ["k": "2"]), online: nil, now: 0)
        #expect(channels.entries[a]?.request.state == ["k": "2"])
        _ = channels.join(Requests.Join(b), online: nil, now: 0)
        #expect(channels.leave(b, online: nil) == [.removed(b)])
        #expect(channels.restore(link: 1, resumed: false, channels: [], now: 0) == [.status(a, .joining), .sendJoin(a, link: 1)])
    }

    @Test("after a resume: channels left offline are left, joins the session does not hold are sent, held joined ones stay")
    func restoreAfterResume() {
        var channels = intents()
        for channel in [a, b] {
            _ = channels.join(Requests.Join(channel), online: 1, now: 0)
            _ = channels.joinAnswered(channel, link: 1, result: .success(joined), now: 0)
        }
        _ = channels.join(Requests.Join(c), online: nil, now: 1) // made offline
        let actions = channels.restore(link: 2, resumed: true, channels: [a, ChannelRef("gone")], now: 2)
        #expect(actions == [.sendLeave(ChannelRef("gone"), link: 2),
                            .status(b, .joining), .sendJoin(b, link: 2),
                            .status(c, .joining), .sendJoin(c, link: 2)])
        #expect(channels.entries[a]?.status == .joined)
    }

    @Test("retryable codes: RATE_LIMITED, UNAVAILABLE, INTERNAL, TIMEOUT")
    func retryable() {
        #expect(ChannelIntents.isRetryable(error(.rateLimited)))
        #expect(ChannelIntents.isRetryable(error(.internal)))
        #expect(ChannelIntents.isRetryable(.connection(.timeout("x"))))
        #expect(!ChannelIntents.isRetryable(error(.forbidden)))
        #expect(!ChannelIntents.isRetryable(.connection(.closed(CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true)))))
    }
}
