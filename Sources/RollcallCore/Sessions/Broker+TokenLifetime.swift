import RollcallProtocol

/// Token lifetime (PROTOCOL §3, 1.1): `refresh`, the `refreshRequired` notice and the 4401
/// `token expired` close.
///
/// Each live session whose token expires has one timer in ``Broker/tokenDeadlines``, keyed by
/// its connection, armed at the next of (notice, expiry) and re-armed by `refresh`. The timers
/// sit in a ``TimerQueue``, so a session far from its expiry costs nothing per tick: a million
/// tokens are a million heap entries, not a million wake-ups. A held session has no timer (it
/// cannot refresh; its hold ends it, or a resume with a fresh token arms a new one).
///
/// The deadlines are armed on the monotonic clock for the wall time that remains until the
/// instant (`exp` is wall time); when one fires, the wall clock decides: a timer that fires
/// early because the wall clock was stepped back is armed again for what remains.
extension Broker {
    /// `exp` + `auth.clockSkewSeconds`: when a session whose token was not refreshed is closed.
    func tokenClosesAt(_ expiresAt: Timestamp) -> Timestamp {
        expiresAt + configuration.auth.clockSkewSeconds.milliseconds
    }

    /// When the `refreshRequired` notice for a token expiring at `expiresAt` is due.
    func tokenNoticeAt(_ expiresAt: Timestamp) -> Timestamp {
        expiresAt - configuration.auth.refreshNoticeSeconds.milliseconds
    }

    /// Arms (or disarms) the session's token timer at the next of its notice (unless sent) and
    /// its expiry. A notice already due fires at the next tick, right after the reply at hand.
    func armTokenTimer(_ session: Session) {
        guard let connection = session.connection else { return }
        guard let expiresAt = session.grant.expiresAt else {
            tokenDeadlines.cancel(connection)
            return
        }
        let closesAt = tokenClosesAt(expiresAt)
        let wall = session.refreshNoticeSent ? closesAt : min(tokenNoticeAt(expiresAt), closesAt)
        tokenDeadlines.schedule(connection, at: clock.monotonicDeadline(forWallTime: wall))
    }

    /// Disarms the token timer of a session leaving its connection (held or ended).
    func disarmTokenTimer(_ session: Session) {
        if let connection = session.connection { tokenDeadlines.cancel(connection) }
    }

    /// Sends the notices and closes the sessions whose timers are due.
    func fireDueTokenTimers() {
        for connection in tokenDeadlines.popDue(now: clock.monotonic) {
            guard let session = directory.session(on: connection), let expiresAt = session.grant.expiresAt else { continue }
            let now = clock.now
            if now >= tokenClosesAt(expiresAt) {
                expire(session, on: connection)
                continue
            }
            if !session.refreshNoticeSent, now >= tokenNoticeAt(expiresAt) {
                session.refreshNoticeSent = true
                outbox.send(SessionEvents.refreshRequired(expiresAt: expiresAt), to: connection)
            }
            armTokenTimer(session)
        }
    }

    /// The token expired without a refresh: the session ends as after a client's close frame
    /// (`leave` everywhere, `offline`), and the connection closes with 4401 `token expired`.
    private func expire(_ session: Session, on connection: ConnectionID) {
        metrics.tokenExpiries += 1
        end(session, .closed)
        close(connection, .unauthorized, reason: "token expired")
    }

    /// `refresh {token}` → `{expiresAt}`: the token must verify for the session's user; its
    /// `exp`, `channels`, `users` and `info` replace the session's for later requests. A bad
    /// token is `UNAUTHORIZED` and changes nothing (the connection stays open); `INVALID_REQUEST`
    /// when the broker does not check tokens (`auth.mode` `none`).
    func refresh(_ request: RefreshRequest, from session: Session) throws(BrokerError) -> JSON {
        let grant: Grant
        switch authenticator.check(userId: session.userId, token: request.token, now: clock.now) {
        case .success(let granted): grant = granted
        case .failure(let refusal):
            metrics.refreshRefusals[refusal.reason, default: 0] += 1
            throw refusal.error
        }
        // The notice is once per token: a refresh to a token with the same `exp` (say, a
        // reissue with other channels) does not repeat it.
        if grant.expiresAt != session.grant.expiresAt { session.refreshNoticeSent = false }
        session.grant = grant
        armTokenTimer(session)
        metrics.refreshes += 1
        return .object(["expiresAt": grant.expiresAt.map { .int(Int($0)) } ?? .null])
    }
}

/// `session` events (PROTOCOL §3, 1.1).
package enum SessionEvents {
    /// `{"event":"session","type":"refreshRequired","expiresAt":ms}`.
    static func refreshRequired(expiresAt: Timestamp) -> [UInt8] {
        JSON.object(["event": "session", "type": "refreshRequired", "expiresAt": .int(Int(expiresAt))]).encoded()
    }
}
