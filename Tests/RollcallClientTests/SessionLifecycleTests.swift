@testable import RollcallClient
import Testing

/// `SessionLifecycle` on plain numbers: no sockets, no clock, no timers.
@Suite struct SessionLifecycleTests {
    typealias Action = SessionLifecycle.Action

    /// A lifecycle with a fixed backoff (0.1 s, no jitter at attempt 0 matters less than
    /// bounds: the tests read the scheduled times back) and two URLs.
    private func machine(window: Double = 0, urls: Int = 2, reconnect: Bool = true) -> SessionLifecycle {
        SessionLifecycle(settings: .init(reconnect: ReconnectPolicy(initialDelay: 0.1, maxDelay: 1, enabled: reconnect),
                                         resumeWindow: window, urlCount: urls))
    }

    private func login(_ token: String = "t1", resumed: Bool = false, channels: [ChannelRef] = []) -> SessionLifecycle.Login {
        .init(resumeToken: token, resumed: resumed, channels: channels, heartbeatInterval: 10, heartbeatTimeout: 30)
    }

    private let dropped = CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true)

    /// The time of the first `.schedule(timer, at:)` among `actions`.
    private func scheduled(_ timer: SessionLifecycle.Timer, in actions: [Action]) -> Double? {
        for case .schedule(timer, let at) in actions { return at }
        return nil
    }

    /// A machine online on link 1 at t = 100.
    private func online(window: Double = 0) -> SessionLifecycle {
        var lifecycle = machine(window: window)
        _ = lifecycle.connect(now: 100)
        _ = lifecycle.linkOpened(1, now: 100)
        _ = lifecycle.appLoggedIn(login(), link: 1, now: 100)
        return lifecycle
    }

    @Test("connect: dial the first URL; open; the app's login puts it online with a liveness check an interval on")
    func firstConnect() {
        var lifecycle = machine()
        #expect(lifecycle.connect(now: 0) == [.publish(.connecting), .dial(link: 1, urlIndex: 0)])
        #expect(lifecycle.connect(now: 0).isEmpty, "once")
        #expect(lifecycle.linkOpened(1, now: 0.1) == [.connected(link: 1)])
        #expect(lifecycle.phase == .open(link: 1))
        let actions = lifecycle.appLoggedIn(login(), link: 1, now: 0.2)
        #expect(actions == [.publish(.online), .schedule(.liveness, at: 10.2)], "no channels to restore on the first login")
        #expect(lifecycle.phase == .online(link: 1) && lifecycle.resumeToken == "t1")
    }

    @Test("a first connect that fails for good (a bad URL, no transport) goes back to idle and reports the failure")
    func firstConnectFails() {
        var lifecycle = machine()
        _ = lifecycle.connect(now: 0)
        #expect(lifecycle.linkClosed(1, info: dropped, now: 0.1, canPass: false) == [.linkLost(link: 1, info: dropped), .connectFailed(dropped)])
        #expect(lifecycle.phase == .idle)
    }

    @Test("a first connect that fails is dialled again after the backoff, on the next URL, until it opens")
    func firstConnectRetried() {
        var lifecycle = machine()
        _ = lifecycle.connect(now: 0)
        let failed = lifecycle.linkClosed(1, info: dropped, now: 1)
        #expect(failed.prefix(2) == [.linkLost(link: 1, info: dropped), .publish(.reconnecting(attempt: 1))])
        guard case .schedule(.reconnect, let at)? = failed.last else { Issue.record("no reconnect timer: \(failed)"); return }
        #expect(at >= 1.05 && at <= 1.1, "the first backoff: \(at)")
        #expect(lifecycle.phase == .connectWaiting(attempt: 1))
        #expect(SessionLifecycle.visibleState(lifecycle.phase) == .reconnecting(attempt: 1))
        #expect(lifecycle.reconnectTimerFired(now: at) == [.dial(link: 2, urlIndex: 1)], "the next URL")
        #expect(lifecycle.phase == .connecting(link: 2, attempt: 1))
        #expect(lifecycle.linkOpened(2, now: at + 0.1) == [.connected(link: 2)], "the app's connect() returns; it logs in itself")
        #expect(lifecycle.phase == .open(link: 2))
    }

    @Test("a first connect stops retrying when reconnecting is off, when the app cancels it, or closes")
    func firstConnectStops() {
        var off = machine(reconnect: false)
        _ = off.connect(now: 0)
        #expect(off.linkClosed(1, info: dropped, now: 0.1) == [.linkLost(link: 1, info: dropped), .connectFailed(dropped)])
        #expect(off.phase == .idle)

        var dialling = machine()
        _ = dialling.connect(now: 0)
        #expect(dialling.connectCancelled(info: dropped) == [.closeLink(link: 1), .linkLost(link: 1, info: dropped), .connectFailed(dropped)])
        #expect(dialling.phase == .idle)

        var waiting = machine()
        _ = waiting.connect(now: 0)
        _ = waiting.linkClosed(1, info: dropped, now: 0.1)
        #expect(waiting.connectCancelled(info: dropped) == [.connectFailed(dropped)])
        #expect(waiting.phase == .idle && waiting.reconnectTimerFired(now: 5).isEmpty, "a late timer dials nothing")
        _ = waiting.connect(now: 6)
        _ = waiting.linkClosed(2, info: dropped, now: 6.1)
        #expect(waiting.close() == [.publish(.closed), .finish])
    }

    @Test("a drop: wait (backoff), dial the next URL, log in with the resume token, restore the channels, online again")
    func dropAndResume() {
        var lifecycle = online()
        let lost = lifecycle.linkClosed(1, info: dropped, now: 200)
        #expect(lost.first == .linkLost(link: 1, info: dropped))
        #expect(lost.contains(.publish(.reconnecting(attempt: 0))))
        let at = try! #require(scheduled(.reconnect, in: lost))
        #expect(at >= 200.05 && at <= 200.1, "attempt 0: within [c/2, c] of 0.1 s")
        #expect(lifecycle.reconnectTimerFired(now: at) == [.dial(link: 2, urlIndex: 1)])
        #expect(lifecycle.linkOpened(2, now: at) == [.sendLogin(link: 2, resumeToken: "t1")])
        let back = lifecycle.reconnectLoggedIn(login("t2", resumed: true, channels: [ChannelRef("a")]), link: 2, now: at + 0.01)
        #expect(back.first == .restoreChannels(link: 2, resumed: true, channels: [ChannelRef("a")]))
        #expect(back.contains(.publish(.online)))
        #expect(lifecycle.resumeToken == "t2" && lifecycle.phase == .online(link: 2))
    }

    @Test("failed attempts back off: each one waits longer, capped")
    func backoffGrows() {
        var lifecycle = online()
        var actions = lifecycle.linkClosed(1, info: dropped, now: 0)
        var previousCeiling = 0.0
        for attempt in 0..<6 {
            let at = try! #require(scheduled(.reconnect, in: actions))
            _ = lifecycle.reconnectTimerFired(now: at)
            let link = lifecycle.lastLink
            let ceiling = min(1, 0.1 * Double(1 << (attempt + 1)))
            actions = lifecycle.linkClosed(link, info: dropped, now: at)
            #expect(actions.contains(.publish(.reconnecting(attempt: attempt + 1))))
            let next = try! #require(scheduled(.reconnect, in: actions)) - at
            #expect(next >= ceiling / 2 && next <= ceiling, "attempt \(attempt + 1): \(next)")
            #expect(ceiling >= previousCeiling)
            previousCeiling = ceiling
        }
    }

    @Test("final closes (1000, 4403, 4409; 4401 without a token provider) and reconnect off end the session")
    func finalCloses() {
        for code: UInt16 in [1000, 4403, 4409, 4401] {
            var lifecycle = online()
            let info = CloseInfo(code: code, reason: "", closedByServer: true, dropped: false)
            let actions = lifecycle.linkClosed(1, info: info, now: 1)
            #expect(actions.suffix(2) == [.publish(.closed), .finish], "\(code)")
            #expect(lifecycle.phase == .closed)
        }
        var withProvider = online()
        withProvider.hasTokenProvider = true
        let expired = CloseInfo(code: 4401, reason: "token expired", closedByServer: true, dropped: false)
        #expect(withProvider.linkClosed(1, info: expired, now: 1).contains(.publish(.reconnecting(attempt: 0))))
        var noReconnect = machine(reconnect: false)
        _ = noReconnect.connect(now: 0)
        _ = noReconnect.linkOpened(1, now: 0)
        _ = noReconnect.appLoggedIn(login(), link: 1, now: 0)
        #expect(noReconnect.linkClosed(1, info: dropped, now: 1).contains(.finish))
    }

    @Test("in the resume window a login that did not resume is logged out and the next URL tried; after it, kept")
    func resumeWindow() {
        var lifecycle = online(window: 5)
        _ = lifecycle.linkClosed(1, info: dropped, now: 10)
        #expect(lifecycle.resumeUntil == 15)
        _ = lifecycle.reconnectTimerFired(now: 10.1)
        _ = lifecycle.linkOpened(2, now: 10.1)
        let early = lifecycle.reconnectLoggedIn(login("fresh"), link: 2, now: 10.2)
        #expect(early == [.publish(.reconnecting(attempt: 1)), .discardLogin(link: 2)])
        #expect(lifecycle.resumeToken == "t1", "the held session's token is kept")
        let next = lifecycle.linkClosed(2, info: CloseInfo(code: 1000, reason: "", closedByServer: true, dropped: false), now: 10.3)
        #expect(next.contains(.publish(.reconnecting(attempt: 1))), "a discarded login's logout is not a final close")
        #expect(lifecycle.reconnectTimerFired(now: 16) == [.dial(link: 3, urlIndex: 0)])
        _ = lifecycle.linkOpened(3, now: 16)
        let late = lifecycle.reconnectLoggedIn(login("fresh2"), link: 3, now: 16)
        #expect(late.first == .restoreChannels(link: 3, resumed: false, channels: []), "after the window a new session is kept")
    }

    @Test("a delay never runs past the end of the resume window")
    func delayCutToTheWindow() {
        var lifecycle = online(window: 0.03)
        let actions = lifecycle.linkClosed(1, info: dropped, now: 50)
        #expect(scheduled(.reconnect, in: actions)! <= 50.03 + 1e-9)
    }

    @Test("a refused reconnect login: RATE_LIMITED waits the broker's retryAfter; UNAUTHORIZED closes")
    func refusedLogins() {
        var lifecycle = online()
        _ = lifecycle.linkClosed(1, info: dropped, now: 0)
        _ = lifecycle.reconnectTimerFired(now: 1)
        _ = lifecycle.linkOpened(2, now: 1)
        let limited = lifecycle.reconnectLoginRefused(link: 2, retryAfter: 3, now: 1)
        #expect(limited.first == .closeLink(link: 2))
        #expect(scheduled(.reconnect, in: limited)! >= 4)
        #expect(lifecycle.phase == .waiting(attempt: 1))
        _ = lifecycle.reconnectTimerFired(now: 4)
        _ = lifecycle.linkOpened(3, now: 4)
        #expect(lifecycle.reconnectLoginRefused(link: 3, retryAfter: nil, now: 4).suffix(2) == [.publish(.closed), .finish])
    }

    @Test("liveness: a ping after an interval of silence, none while frames arrive, the link given up after the timeout")
    func liveness() {
        var lifecycle = machine()
        _ = lifecycle.connect(now: 0)
        _ = lifecycle.linkOpened(1, now: 0)
        _ = lifecycle.appLoggedIn(.init(resumeToken: "t", resumed: false, channels: [], heartbeatInterval: 1, heartbeatTimeout: 3), link: 1, now: 0)
        lifecycle.received(on: 1, now: 0.5)
        #expect(lifecycle.livenessCheck(now: 1) == [.schedule(.liveness, at: 1.5)], "heard 0.5 s ago: look again at 1.5")
        #expect(lifecycle.livenessCheck(now: 1.5) == [.sendPing(link: 1), .schedule(.liveness, at: 2.5)])
        #expect(lifecycle.livenessCheck(now: 2.5) == [.schedule(.liveness, at: 3.5)], "one ping out at a time")
        let dead = lifecycle.livenessCheck(now: 3.6)
        #expect(dead.first == .abortLink(link: 1))
        guard case .linkLost(1, let info) = dead[1] else { Issue.record("\(dead)"); return }
        #expect(info.dropped && info.reason.contains("heartbeat timeout"))
        #expect(dead.contains(.publish(.reconnecting(attempt: 0))))
        #expect(lifecycle.resumeUntil == 3.6 + 4, "two intervals + 2 s for the broker to notice")
        #expect(lifecycle.linkClosed(1, info: dropped, now: 3.7).isEmpty, "the link's late close is ignored")
        #expect(lifecycle.livenessCheck(now: 4).isEmpty, "no liveness while waiting")
    }

    @Test("inputs about links that are no longer current change nothing; close works from any phase")
    func staleInputsAndClose() {
        var lifecycle = online()
        #expect(lifecycle.linkOpened(7, now: 1).isEmpty)
        #expect(lifecycle.linkClosed(7, info: dropped, now: 1).isEmpty)
        #expect(lifecycle.reconnectLoggedIn(login(), link: 7, now: 1).isEmpty)
        #expect(lifecycle.close() == [.closeLink(link: 1), .publish(.closed), .finish])
        #expect(lifecycle.close().isEmpty)
        var waiting = online()
        _ = waiting.linkClosed(1, info: dropped, now: 0)
        #expect(waiting.close() == [.publish(.closed), .finish])
        #expect(waiting.reconnectTimerFired(now: 5).isEmpty, "a timer after close does nothing")
    }

    @Test("the state apps see for each phase")
    func visibleStates() {
        #expect(SessionLifecycle.visibleState(.open(link: 1)) == .connecting)
        #expect(SessionLifecycle.visibleState(.loggingIn(link: 2, attempt: 3)) == .reconnecting(attempt: 3))
        #expect(SessionLifecycle.visibleState(.discarding(link: 2, next: 4)) == .reconnecting(attempt: 4))
        #expect(SessionLifecycle.visibleState(.closed) == .closed)
    }
}
