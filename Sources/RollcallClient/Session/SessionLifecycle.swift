/// A ``RollcallSession``'s connection life as a value: connecting, online, lost and waiting to
/// reconnect, logging in again (resume or not), closed. Each input (the app's call, a transport
/// callback, a login's outcome, a timer at a monotonic `now` in seconds) moves it and returns
/// the ``Action``s the session carries out; it does no I/O, reads no clock and keeps no timer,
/// so it is tested with plain numbers (`SessionLifecycleTests`).
///
/// Links are numbered: every transport the session opens gets the next number, and an input
/// about a link that is no longer the current one is ignored (a late close of a link that
/// liveness already gave up on, say).
///
/// - `idle` → `connecting` (``connect(now:)``) → `open` → `online` (the app's login).
/// - `connecting` → `connectWaiting(attempt: 1)`: the first link could not be opened; it is
///   dialled again (the next URL) after the backoff, until it opens, the app closes or cancels,
///   or the failure is one that cannot pass (a bad URL, no WebSocket transport): then `idle`.
/// - `online` → `waiting(attempt: 0)`: the link was lost (``linkClosed(_:info:now:)``, or
///   ``livenessCheck(now:)`` heard nothing for `heartbeatTimeoutSeconds`), unless the close was
///   final (``RollcallSession/isFinal(_:hasTokenProvider:)``).
/// - `waiting(n)` → `reconnecting(n)` (the reconnect timer) → `loggingIn(n)` (open: log in with
///   the last resume token) → `online`; a failure → `waiting(n + 1)`.
/// - `loggingIn` → `discarding`: a login that did not resume while the resume window is open
///   (its node may not be declared dead yet): it is logged out again and the next URL tried.
/// - any → `closed`: ``close()``, a final close, a refused login, reconnect disabled.
struct SessionLifecycle: Sendable, Equatable {
    /// What the lifecycle needs to know of the session's settings.
    struct Settings: Sendable, Equatable {
        var reconnect: ReconnectPolicy
        /// Seconds after a drop during which a login that did not resume is not kept.
        var resumeWindow: Double
        /// How many URLs are dialled in turn.
        var urlCount: Int
    }

    /// Where the session is.
    enum Phase: Sendable, Equatable {
        /// Before ``connect(now:)``, or after a first connect that failed.
        case idle
        /// The first link's handshake; `attempt` counts the first connect's tries (0-based).
        case connecting(link: Int, attempt: Int)
        /// The first connect failed `attempt` times; the reconnect timer dials again.
        case connectWaiting(attempt: Int)
        /// The first link is open; the app logs in.
        case open(link: Int)
        /// Logged in on `link`.
        case online(link: Int)
        /// Waiting for the reconnect timer before attempt `attempt` (0-based).
        case waiting(attempt: Int)
        /// Reconnect attempt `attempt`: the link's handshake.
        case reconnecting(link: Int, attempt: Int)
        /// Reconnect attempt `attempt`: the link is open and the login was sent.
        case loggingIn(link: Int, attempt: Int)
        /// A login that did not resume in the window is being logged out; then attempt `next`.
        case discarding(link: Int, next: Int)
        /// Ended for good.
        case closed
    }

    /// The timers the session keeps for the lifecycle.
    enum Timer: Sendable, Equatable {
        /// Reconnect now (``reconnectTimerFired(now:)``).
        case reconnect
        /// Look at the link's liveness (``livenessCheck(now:)``).
        case liveness
    }

    /// What the session does.
    enum Action: Sendable, Equatable {
        /// Open a transport to `urls[urlIndex]` as link `link`.
        case dial(link: Int, urlIndex: Int)
        /// Log in on `link` with the remembered login and `resumeToken`.
        case sendLogin(link: Int, resumeToken: String?)
        /// Log the new session on `link` out again and close the link.
        case discardLogin(link: Int)
        /// After a login on `link`: reconcile the channels (join again when not resumed).
        case restoreChannels(link: Int, resumed: Bool, channels: [ChannelRef])
        /// Send a liveness `ping` on `link`.
        case sendPing(link: Int)
        /// Close `link` with a close frame (1000).
        case closeLink(link: Int)
        /// Cut `link` without a close frame (found dead).
        case abortLink(link: Int)
        /// Run ``Timer`` at monotonic time `at` (replacing a pending one of the same kind).
        case schedule(Timer, at: Double)
        /// The link is gone: requests in flight fail, waiters are released.
        case linkLost(link: Int, info: CloseInfo)
        /// The connection state apps see changed.
        case publish(RollcallSession.ConnectionState)
        /// The first link is open (``connect(now:)``'s caller returns).
        case connected(link: Int)
        /// The first connect failed (``connect(now:)``'s caller throws).
        case connectFailed(CloseInfo)
        /// The session ended: streams finish, waiters are released.
        case finish
    }

    /// A login the session learned about.
    struct Login: Sendable, Equatable {
        var resumeToken: String
        var resumed: Bool
        var channels: [ChannelRef]
        var heartbeatInterval: Double
        var heartbeatTimeout: Double
    }

    private(set) var phase: Phase = .idle
    let settings: Settings
    /// The number of the last link opened.
    private(set) var lastLink = 0
    /// The URL dialled last.
    private(set) var urlIndex = 0
    /// The last login's resume token; nil before the first login.
    private(set) var resumeToken: String?
    /// While the resume window is open: when it closes.
    private(set) var resumeUntil: Double?
    /// Liveness of the online link: monotonic seconds of the last frame received, and of the
    /// ping sent since (nil when none is out).
    private(set) var lastReceived: Double = 0
    private(set) var pingSentAt: Double?
    private(set) var heartbeatInterval: Double = 10
    private(set) var heartbeatTimeout: Double = 30
    /// Whether a token provider can supply a fresh token (4401 is then not final).
    var hasTokenProvider = false

    init(settings: Settings) {
        self.settings = settings
    }

    /// The link the session talks on, if any.
    var currentLink: Int? {
        switch phase {
        case .connecting(let link, _), .open(let link), .online(let link), .reconnecting(let link, _),
             .loggingIn(let link, _), .discarding(let link, _):
            return link
        case .idle, .connectWaiting, .waiting, .closed:
            return nil
        }
    }

    /// The state apps see for a phase.
    static func visibleState(_ phase: Phase) -> RollcallSession.ConnectionState {
        switch phase {
        case .idle, .connecting(_, 0), .open: .connecting
        case .connecting(_, let attempt), .connectWaiting(let attempt): .reconnecting(attempt: attempt)
        case .online: .online
        case .waiting(let attempt), .reconnecting(_, let attempt), .loggingIn(_, let attempt): .reconnecting(attempt: attempt)
        case .discarding(_, let next): .reconnecting(attempt: next)
        case .closed: .closed
        }
    }

    // MARK: - The app

    /// ``RollcallSession/connect()``: opens the first link.
    mutating func connect(now: Double) -> [Action] {
        guard phase == .idle else { return [] }
        lastLink += 1
        phase = .connecting(link: lastLink, attempt: 0)
        return [.publish(.connecting), .dial(link: lastLink, urlIndex: urlIndex)]
    }

    /// The app gave up waiting for the first connect (its task was cancelled): back to `idle`.
    mutating func connectCancelled(info: CloseInfo) -> [Action] {
        switch phase {
        case .connecting(let link, _):
            phase = .idle
            return [.closeLink(link: link), .linkLost(link: link, info: info), .connectFailed(info)]
        case .connectWaiting:
            phase = .idle
            return [.connectFailed(info)]
        default:
            return []
        }
    }

    /// The app's own login on the first link succeeded.
    mutating func appLoggedIn(_ login: Login, link: Int, now: Double) -> [Action] {
        guard case .open(link) = phase else { return [] }
        return goOnline(link: link, login: login, now: now)
    }

    /// ``RollcallSession/close()``.
    mutating func close() -> [Action] {
        guard phase != .closed else { return [] }
        let link = currentLink
        phase = .closed
        resumeUntil = nil
        return (link.map { [.closeLink(link: $0)] } ?? []) + [.publish(.closed), .finish]
    }

    // MARK: - Links

    /// Link `link`'s handshake succeeded.
    mutating func linkOpened(_ link: Int, now: Double) -> [Action] {
        switch phase {
        case .connecting(link, _):
            phase = .open(link: link)
            return [.connected(link: link)]
        case .reconnecting(link, let attempt):
            phase = .loggingIn(link: link, attempt: attempt)
            return [.sendLogin(link: link, resumeToken: resumeToken)]
        default:
            return []
        }
    }

    /// Link `link` ended (or never opened). `canPass` is false for a failure that the same dial
    /// would meet again (a bad URL, no WebSocket transport here): a first connect then fails at
    /// once instead of being retried.
    mutating func linkClosed(_ link: Int, info: CloseInfo, now: Double, canPass: Bool = true) -> [Action] {
        guard currentLink == link else { return [] }
        switch phase {
        case .connecting(_, let attempt):
            guard canPass, settings.reconnect.enabled else {
                phase = .idle
                return [.linkLost(link: link, info: info), .connectFailed(info)]
            }
            phase = .connectWaiting(attempt: attempt + 1)
            let delay = settings.reconnect.delay(attempt: attempt)
            return [.linkLost(link: link, info: info), .publish(.reconnecting(attempt: attempt + 1)),
                    .schedule(.reconnect, at: now + delay)]
        case .open:
            // Lost before the app logged in: nothing to resume.
            return end(link: link, info: info)
        case .online:
            if isFinal(info) { return end(link: link, info: info) }
            openResumeWindow(info: info, atLeast: 0, now: now)
            return [.linkLost(link: link, info: info)] + wait(attempt: 0, now: now)
        case .reconnecting(_, let attempt), .loggingIn(_, let attempt):
            if isFinal(info) { return end(link: link, info: info) }
            return [.linkLost(link: link, info: info)] + wait(attempt: attempt + 1, now: now)
        case .discarding(_, let next):
            return [.linkLost(link: link, info: info)] + wait(attempt: next, now: now)
        case .idle, .connectWaiting, .waiting, .closed:
            return []
        }
    }

    /// A frame arrived on `link`: it is alive.
    mutating func received(on link: Int, now: Double) {
        guard currentLink == link else { return }
        lastReceived = now
        pingSentAt = nil
    }

    // MARK: - Logins on reconnect

    /// The reconnect's login on `link` succeeded.
    mutating func reconnectLoggedIn(_ login: Login, link: Int, now: Double) -> [Action] {
        guard case .loggingIn(link, let attempt) = phase else { return [] }
        if !login.resumed, resumeToken != nil, let until = resumeUntil, now < until {
            // Its node may not be declared dead yet: log this new session out again (it joined
            // nothing, so nobody saw it), keep the held one's token, try the next URL.
            phase = .discarding(link: link, next: attempt + 1)
            return [.publish(.reconnecting(attempt: attempt + 1)), .discardLogin(link: link)]
        }
        return goOnline(link: link, login: login, now: now)
    }

    /// The reconnect's login on `link` was refused. `retryAfter` (seconds) is the broker's
    /// figure for a refusal that may pass (`RATE_LIMITED`, `UNAVAILABLE`, …), nil for one that
    /// will be refused again: the session then closes.
    mutating func reconnectLoginRefused(link: Int, retryAfter: Double?, now: Double) -> [Action] {
        guard case .loggingIn(link, let attempt) = phase else { return [] }
        guard let retryAfter else { return end(link: link, info: nil) }
        phase = .waiting(attempt: attempt + 1)
        let delay = max(retryAfter, settings.reconnect.delay(attempt: attempt + 1))
        return [.closeLink(link: link), .publish(.reconnecting(attempt: attempt + 1)), .schedule(.reconnect, at: now + delay)]
    }

    /// The reconnect timer fired.
    mutating func reconnectTimerFired(now: Double) -> [Action] {
        let attempt: Int
        switch phase {
        case .waiting(let waited), .connectWaiting(let waited): attempt = waited
        default: return []
        }
        lastLink += 1
        // Several URLs: the next one (its node may be the one that went away).
        urlIndex = (urlIndex + 1) % max(1, settings.urlCount)
        if case .connectWaiting = phase {
            phase = .connecting(link: lastLink, attempt: attempt)
        } else {
            phase = .reconnecting(link: lastLink, attempt: attempt)
        }
        return [.dial(link: lastLink, urlIndex: urlIndex)]
    }

    // MARK: - Liveness (PROTOCOL §3, 1.2)

    /// The liveness timer fired: ping after `heartbeatIntervalSeconds` of silence, give the
    /// link up after `heartbeatTimeoutSeconds`.
    mutating func livenessCheck(now: Double) -> [Action] {
        guard case .online(let link) = phase else { return [] }
        let silent = now - lastReceived
        if silent >= heartbeatTimeout {
            let info = CloseInfo(code: nil, reason: "nothing received for \(Int(silent * 1000)) ms (heartbeat timeout)",
                                 closedByServer: false, dropped: true)
            openResumeWindow(info: info, atLeast: 2 * heartbeatInterval + 2, now: now)
            // The broker may not have noticed yet: it waits for its own heartbeat timeout, and
            // answers `resumed: false` meanwhile, so the window covers two intervals more.
            return [.abortLink(link: link), .linkLost(link: link, info: info)] + wait(attempt: 0, now: now)
        }
        var actions: [Action] = []
        if silent >= heartbeatInterval, pingSentAt == nil {
            pingSentAt = now
            actions.append(.sendPing(link: link))
        }
        // Pinged: look again at the timeout, or an interval on (the reply has come by then).
        let next = silent >= heartbeatInterval ? min(heartbeatTimeout - silent, heartbeatInterval) : heartbeatInterval - silent
        actions.append(.schedule(.liveness, at: now + max(0.005, next)))
        return actions
    }

    // MARK: - Helpers

    private mutating func goOnline(link: Int, login: Login, now: Double) -> [Action] {
        let restoring = resumeToken != nil
        phase = .online(link: link)
        resumeToken = login.resumeToken
        resumeUntil = nil
        heartbeatInterval = login.heartbeatInterval
        heartbeatTimeout = login.heartbeatTimeout
        lastReceived = now
        pingSentAt = nil
        var actions: [Action] = []
        if restoring { actions.append(.restoreChannels(link: link, resumed: login.resumed, channels: login.channels)) }
        actions.append(.publish(.online))
        actions.append(.schedule(.liveness, at: now + heartbeatInterval))
        return actions
    }

    private mutating func wait(attempt: Int, now: Double) -> [Action] {
        phase = .waiting(attempt: attempt)
        var delay = settings.reconnect.delay(attempt: attempt)
        // No later than the end of the resume window: then a new session is kept.
        if let resumeUntil, resumeUntil - now > 0 { delay = min(delay, resumeUntil - now) }
        return [.publish(.reconnecting(attempt: attempt)), .schedule(.reconnect, at: now + delay)]
    }

    private mutating func end(link: Int, info: CloseInfo?) -> [Action] {
        phase = .closed
        resumeUntil = nil
        var actions: [Action] = [.closeLink(link: link)]
        if let info { actions.append(.linkLost(link: link, info: info)) }
        return actions + [.publish(.closed), .finish]
    }

    /// Whether a close ends the session for good (see ``RollcallSession/isFinal(_:hasTokenProvider:)``),
    /// or reconnecting is off.
    private func isFinal(_ info: CloseInfo) -> Bool {
        !settings.reconnect.enabled || RollcallSession.isFinal(info, hasTokenProvider: hasTokenProvider)
    }

    /// After a drop of a logged-in link: for the resume window, a login that does not resume is
    /// not kept — unless the close ended the session (4401, 1012), where no resume can succeed.
    private mutating func openResumeWindow(info: CloseInfo, atLeast: Double, now: Double) {
        let window = max(settings.resumeWindow, atLeast)
        let resumable = resumeToken != nil && window > 0 && !RollcallSession.endedTheSession(info)
        resumeUntil = resumable ? now + window : nil
    }
}
