import Foundation
import RollcallProtocol

/// What a session does when its connection ends: reconnect with backoff and resume, unless
/// this side closed it or the close ended the session (docs/client.md, "RollcallSession").
extension RollcallSession {
    /// Whether a close says the session is gone, so no resume can succeed: 4401 (the token
    /// expired: ended as by a close frame) and 1012 (``CloseInfo/isClusterDataLost``).
    static func endedTheSession(_ info: CloseInfo) -> Bool {
        info.code == 4401 || info.isClusterDataLost
    }

    /// The connection ended; reconnect unless this side closed it or the close was final.
    func lost(_ connection: RollcallConnection, _ info: CloseInfo) {
        let next = lock.withLock { () -> Int? in
            if let discarded, discarded.connection === connection {
                // A login that did not resume in the window, logged out again: the next URL.
                self.discarded = nil
                if self.connection === connection { self.connection = nil }
                return closing ? nil : discarded.nextAttempt
            }
            guard self.connection === connection else { return nil }
            self.connection = nil
            guard !closing, reconnect.enabled, loginRequest != nil,
                  !Self.isFinal(info, hasTokenProvider: provider != nil) else { return nil }
            let resumable = resumeToken != nil && resumeWindow > 0 && !Self.endedTheSession(info)
            resumeUntil = resumable ? Self.monotonicSeconds + resumeWindow : nil
            return 0
        }
        releaseSnapshotWaiters(nil)
        guard let next else {
            if !lock.withLock({ closing }) { close() }
            return
        }
        scheduleReconnect(attempt: next)
    }

    /// The monotonic clock, in seconds (the resume window must not move with the wall clock).
    private static var monotonicSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Whether the resume window is open: a login that does not resume is not kept.
    private var stillResuming: Bool {
        guard let resumeUntil = lock.withLock({ resumeUntil }) else { return false }
        return Self.monotonicSeconds < resumeUntil
    }

    func scheduleReconnect(attempt: Int) {
        setState(.reconnecting(attempt: attempt))
        var delay = reconnect.delay(attempt: attempt)
        // No later than the end of the resume window: then a new session is kept.
        if let resumeUntil = lock.withLock({ resumeUntil }) {
            let left = resumeUntil - Self.monotonicSeconds
            if left > 0 { delay = min(delay, left) }
        }
        // Several URLs: the next one (its node may be the one that went away).
        lock.withLock { urlIndex = (urlIndex + 1) % urls.count }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.lock.withLock({ self.closing }) else { return }
            Task { await self.reconnectOnce(attempt: attempt) }
        }
    }

    /// One attempt: open, log in with the last resume token, re-join when not resumed.
    func reconnectOnce(attempt: Int) async {
        guard case .success(let connection) = await open() else { return scheduleReconnect(attempt: attempt + 1) }
        let (login, channels) = lock.withLock { () -> (Requests.Login?, [Requests.Join]) in
            self.connection = connection
            var login = loginRequest
            login?.resumeToken = resumeToken
            return (login, Array(joins.values))
        }
        guard var login else { return }
        if let provider = tokenProvider, let fresh = try? await provider() {
            login.token = fresh
            lock.withLock { loginRequest?.token = fresh }
        }
        do {
            let result = try await send(login)
            if !result.resumed, login.resumeToken != nil, stillResuming {
                // Its node may not be declared dead yet: log this new session out again (it
                // joined nothing, so nobody saw it), keep the held one's token, try the next URL.
                lock.withLock { discarded = (connection, attempt + 1) }
                _ = try? await send(Requests.Logout())
                connection.close()
                return
            }
            lock.withLock {
                resumeToken = result.resumeToken
                latestLogin = result
                resumeUntil = nil
            }
            if !result.resumed {
                for join in channels { _ = try await send(join) }
            }
            setState(.online)
        } catch {
            if case .server = error { close() } // a refused login will be refused again
            // a lost connection reports itself through onClose and schedules the next attempt
        }
    }
}
