import Foundation
import RollcallProtocol

/// Carrying out ``SessionLifecycle``'s actions: links, logins after a reconnect, timers, streams.
extension RollcallSession {
    /// A pending timer of the session.
    enum TimerKey: Hashable {
        case lifecycle(SessionLifecycle.Timer)
        case retry(ChannelRef)
    }

    /// Runs the lifecycle's actions in order. State changes are published under the lock, so
    /// that readers of ``states`` see them in the order they happened.
    func perform(_ actions: [SessionLifecycle.Action]) {
        for action in actions {
            switch action {
            case .publish(let state):
                lock.withLock { stateBroadcast.yield(state) }
            case .dial(let number, let urlIndex):
                dial(number, url: urls[urlIndex])
            case .connected:
                resumeConnectWaiter(.success(()))
            case .connectFailed(let info):
                let failure = lock.withLock { lastConnectFailure }
                resumeConnectWaiter(.failure(.connection(failure ?? .connectFailed(info.description))))
            case .sendLogin(let number, let resumeToken):
                guard let link = lock.withLock({ links[number] }) else { continue }
                Task { await self.logInAgain(on: link, resumeToken: resumeToken) }
            case .discardLogin(let number):
                guard let link = lock.withLock({ links[number] }) else { continue }
                request(Requests.Logout(), on: link) { _ in link.close() }
            case .restoreChannels(let number, let resumed, let channels):
                perform(lock.withLock { intents.restore(link: number, resumed: resumed, channels: channels, now: Self.now) })
            case .sendPing(let number):
                guard let link = lock.withLock({ links[number] }) else { continue }
                let timeout = lock.withLock { lifecycle.heartbeatTimeout }
                request(Requests.Ping(), on: link, timeout: timeout) { _ in }
            case .closeLink(let number):
                lock.withLock { links[number] }?.close()
            case .abortLink(let number):
                lock.withLock { links[number] }?.abort()
            case .schedule(let timer, let at):
                schedule(.lifecycle(timer), at: at)
            case .linkLost(let number, let info):
                linkLost(number, info)
            case .finish:
                finish()
            }
        }
    }

    /// Opens link `number` to `url`.
    private func dial(_ number: Int, url: String) {
        let transport: any WebSocketTransport
        do {
            transport = try self.transport.transport(url: url, options: options)
        } catch {
            let info = Self.notConnected(error.description)
            let actions = lock.withLock { () -> [SessionLifecycle.Action] in
                lastConnectFailure = error
                return lifecycle.linkClosed(number, info: info, now: Self.now, canPass: error.mayPass)
            }
            perform(actions)
            return
        }
        let link = SessionLink(number: number, transport: transport)
        lock.withLock { links[number] = link }
        link.start(SessionLink.Handlers(
            opened: { [weak self] link in
                guard let self else { return }
                self.perform(self.lock.withLock { self.lifecycle.linkOpened(link.number, now: Self.now) })
            },
            received: { [weak self] link in
                guard let self else { return }
                self.lock.withLock { self.lifecycle.received(on: link.number, now: Self.now) }
            },
            event: { [weak self] link, event in self?.received(event, on: link) },
            closed: { [weak self] link, info, failure in
                guard let self else { return }
                let actions = self.lock.withLock { () -> [SessionLifecycle.Action] in
                    if let failure { self.lastConnectFailure = failure }
                    self.links[link.number] = nil
                    return self.lifecycle.linkClosed(link.number, info: info, now: Self.now, canPass: failure?.mayPass ?? true)
                }
                self.perform(actions)
            }))
    }

    /// A reconnect's login on `link`, with the last resume token (and a fresh token from the provider).
    private func logInAgain(on link: SessionLink, resumeToken: String?) async {
        guard var login = lock.withLock({ loginRequest }) else { return }
        login.resumeToken = resumeToken
        if let provider = tokenProvider, let fresh = try? await provider() {
            login.token = fresh
            lock.withLock { loginRequest?.token = fresh }
        }
        request(login, on: link) { [weak self] outcome in
            guard let self else { return }
            let actions = self.lock.withLock { () -> [SessionLifecycle.Action] in
                switch outcome {
                case .success(let result):
                    self.latestLogin = result
                    return self.lifecycle.reconnectLoggedIn(Self.lifecycleLogin(result), link: link.number, now: Self.now)
                case .failure(let error) where ChannelIntents.isRetryable(error):
                    // Rate limited, unavailable, timed out: try again after the broker's figure.
                    let retryAfter = error.retryAfterMs.map { Double($0) / 1000 } ?? 0
                    return self.lifecycle.reconnectLoginRefused(link: link.number, retryAfter: retryAfter, now: Self.now)
                case .failure(.server):
                    // A refused login (UNAUTHORIZED, an invalid user) will be refused again.
                    return self.lifecycle.reconnectLoginRefused(link: link.number, retryAfter: nil, now: Self.now)
                case .failure:
                    return [] // the link went: its close moves the lifecycle
                }
            }
            self.perform(actions)
        }
    }

    /// A link ended: its requests fail now (liveness may give a link up before its transport
    /// says so), joins in flight wait for the next login, `join` calls waiting for a snapshot return.
    private func linkLost(_ number: Int, _ info: CloseInfo) {
        let (link, waiting) = lock.withLock { () -> (SessionLink?, [(ChannelRef, JoinResult)]) in
            intents.linkLost(number)
            let link = links.removeValue(forKey: number)
            let waiting = joinedBeforeSnapshot.map { ($0.key, $0.value) }
            joinedBeforeSnapshot.removeAll()
            awaitingSnapshot.removeAll()
            return (link, waiting)
        }
        link?.end(info)
        for (channel, result) in waiting { resolveJoinWaiters(channel, .success(result)) }
    }

    private func resumeConnectWaiter(_ result: Result<Void, RollcallError>) {
        let waiter = lock.withLock { () -> CheckedContinuation<Result<Void, RollcallError>, Never>? in
            defer { connectWaiter = nil }
            return connectWaiter
        }
        waiter?.resume(returning: result)
    }

    /// The session ended: every stream finishes, every waiter is released, timers stop.
    private func finish() {
        let (waiters, streams, pending) = lock.withLock {
            () -> ([CheckedContinuation<Result<JoinResult, RollcallError>, Never>], [Broadcast<RosterUpdate>], [DispatchWorkItem]) in
            defer {
                joinWaiters.removeAll()
                joinedBeforeSnapshot.removeAll()
                awaitingSnapshot.removeAll()
                rosterStreams.removeAll()
                timers.removeAll()
            }
            return (joinWaiters.values.flatMap { $0 }, Array(rosterStreams.values), Array(timers.values))
        }
        for timer in pending { timer.cancel() }
        resumeConnectWaiter(.failure(.connection(.closed(Self.notConnected("the session closed")))))
        for waiter in waiters { waiter.resume(returning: .failure(.connection(.closed(Self.notConnected("the session closed"))))) }
        for stream in streams { stream.finish() }
        eventBroadcast.finish()
        stateBroadcast.finish()
    }

    /// Runs the timer `key` at monotonic time `at`, replacing a pending one with the same key.
    func schedule(_ key: TimerKey, at: Double) {
        let item = DispatchWorkItem { [weak self] in self?.timerFired(key) }
        let previous = lock.withLock { () -> DispatchWorkItem? in
            guard lifecycle.phase != .closed else { return nil }
            defer { timers[key] = item }
            return timers[key]
        }
        previous?.cancel()
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, at - Self.now), execute: item)
    }

    private func timerFired(_ key: TimerKey) {
        switch key {
        case .lifecycle(.reconnect):
            perform(lock.withLock { lifecycle.reconnectTimerFired(now: Self.now) })
        case .lifecycle(.liveness):
            perform(lock.withLock { lifecycle.livenessCheck(now: Self.now) })
        case .retry(let channel):
            perform(lock.withLock { intents.retryTimerFired(channel, link: onlineLink, now: Self.now) })
        }
    }

    /// The link of an online session, nil otherwise; with `lock` held.
    var onlineLink: Int? {
        if case .online(let number) = lifecycle.phase { return number }
        return nil
    }
}
