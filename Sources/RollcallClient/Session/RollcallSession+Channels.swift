import Foundation
import RollcallProtocol

/// Channels: the app's joins and leaves as intent (``ChannelIntents``), rosters kept from
/// snapshots and events, pages and re-reads fetched in order, roster updates for readers.
extension RollcallSession {
    /// Joins a channel. With `presence` its ``roster(of:)`` is kept, and the call returns once
    /// the snapshot that follows the reply has been applied (or the link went), so the roster
    /// is ready when `join` returns.
    ///
    /// The channel is kept as intent: joined again after a reconnect that could not resume. A
    /// join made while reconnecting is sent after the next login (the call waits for it). A
    /// reply `RATE_LIMITED`, `UNAVAILABLE`, `INTERNAL` or `TIMEOUT` is retried after its
    /// `retryAfterMs` (``ChannelStatus/retrying(after:error:)``; the call waits); another error
    /// is thrown, and the channel is forgotten. Throws code `CLOSED` before the first login and
    /// after ``close()``.
    @discardableResult
    public func join(_ channel: ChannelRef, presence: Bool = true, messages: Bool = true,
                     state: [String: String]? = nil) async throws(RollcallError) -> JoinResult {
        let request = Requests.Join(channel, presence: presence, messages: messages, state: state)
        let outcome: Result<JoinResult, RollcallError> = await withCheckedContinuation { continuation in
            let actions = lock.withLock { () -> [ChannelIntents.Action]? in
                guard loginRequest != nil, lifecycle.phase != .closed else { return nil }
                joinWaiters[channel, default: []].append(continuation)
                if presence, rosters[channel] == nil { rosters[channel] = Roster(channel) }
                return intents.join(request, online: onlineLink, now: Self.now)
            }
            guard let actions else {
                continuation.resume(returning: .failure(.connection(.closed(Self.notConnected("join needs a logged-in session")))))
                return
            }
            perform(actions)
        }
        return try outcome.get()
    }

    /// Leaves a channel and forgets its roster (its ``rosterUpdates(of:limit:)`` end). Online,
    /// waits for the broker's reply; offline, returns at once (a resumed session leaves the
    /// channel after the reconnect).
    public func leave(_ channel: ChannelRef) async throws(RollcallError) {
        let (actions, link) = lock.withLock { () -> ([ChannelIntents.Action], SessionLink?) in
            (intents.leave(channel, online: nil), onlineLink.flatMap { links[$0] })
        }
        perform(actions)
        if let link { _ = try await send(Requests.Leave(channel), on: link) }
    }

    /// Runs the channel intents' actions in order.
    func perform(_ actions: [ChannelIntents.Action]) {
        for action in actions {
            switch action {
            case .sendJoin(let channel, let number):
                sendJoin(channel, on: number)
            case .sendLeave(let channel, let number):
                guard let link = lock.withLock({ links[number] }) else { continue }
                request(Requests.Leave(channel), on: link) { _ in }
            case .scheduleRetry(let channel, let at):
                schedule(.retry(channel), at: at)
            case .status(let channel, let status):
                publishUpdate(channel, cause: .status, changes: [], status: status)
            case .joined(let channel, let result):
                let waitsForSnapshot = lock.withLock { () -> Bool in
                    guard awaitingSnapshot.contains(channel) else { return false }
                    joinedBeforeSnapshot[channel] = result
                    return true
                }
                if !waitsForSnapshot { resolveJoinWaiters(channel, .success(result)) }
            case .refused(let channel, let error):
                resolveJoinWaiters(channel, .failure(error))
            case .removed(let channel):
                let stream = lock.withLock { () -> Broadcast<RosterUpdate>? in
                    rosters[channel] = nil
                    awaitingSnapshot.remove(channel)
                    joinedBeforeSnapshot[channel] = nil
                    return rosterStreams.removeValue(forKey: channel)
                }
                stream?.finish()
                resolveJoinWaiters(channel, .failure(.connection(.closed(Self.notConnected("left \(channel) before the join completed")))))
            }
        }
    }

    /// Sends the channel's join (its intent's request) on link `number`.
    private func sendJoin(_ channel: ChannelRef, on number: Int) {
        guard let (link, join) = lock.withLock({ () -> (SessionLink, Requests.Join)? in
            guard let link = links[number], let join = intents.entries[channel]?.request else { return nil }
            if join.presence {
                if rosters[channel] == nil { rosters[channel] = Roster(channel) }
                // The snapshot that follows this join replaces the roster.
                awaitingSnapshot.insert(channel)
                // Joining again with a state changes the own state: an event others get, not this user.
                if join.state != nil, rosters[channel]?.seq != nil { rosters[channel]?.allowSkippedSeq() }
            }
            return (link, join)
        }) else { return }
        request(join, on: link) { [weak self] outcome in
            guard let self else { return }
            self.perform(self.lock.withLock { self.intents.joinAnswered(channel, link: number, result: outcome, now: Self.now) })
        }
    }

    /// Resumes the app's `join` calls for `channel`.
    func resolveJoinWaiters(_ channel: ChannelRef, _ result: Result<JoinResult, RollcallError>) {
        let waiters = lock.withLock { joinWaiters.removeValue(forKey: channel) ?? [] }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    // MARK: Events

    /// A link's event: presence events are applied to their roster (pages and re-reads
    /// fetched), a `refreshRequired` is answered with the token provider's token, and the typed
    /// event goes to every reader.
    func received(_ event: Event, on link: SessionLink) {
        let typed = RollcallEvent(event)
        switch typed {
        case .presence(let presence):
            apply(presence, on: link)
        case .session(let notice) where notice.type == .refreshRequired:
            if let provider = tokenProvider {
                Task { [weak self] in
                    guard let token = try? await provider() else { return }
                    _ = try? await self?.refresh(token: token)
                }
            }
        default:
            break
        }
        eventBroadcast.yield(typed)
    }

    private func apply(_ event: PresenceEvent, on link: SessionLink) {
        let channel = event.channelRef
        var changes: [RosterChange] = []
        let (outcome, snapshotJoin) = lock.withLock { () -> (RosterOutcome?, JoinResult??) in
            let outcome = rosters[channel]?.apply(event) { changes.append($0) }
            guard event.type == .snapshot, awaitingSnapshot.remove(channel) != nil else { return (outcome, nil) }
            return (outcome, .some(joinedBeforeSnapshot.removeValue(forKey: channel)))
        }
        guard let outcome, outcome != .ignored else { return }
        publishUpdate(channel, cause: .event(event.type), changes: changes)
        if case .some(.some(let joined)) = snapshotJoin { resolveJoinWaiters(channel, .success(joined)) }
        follow(outcome, channel: channel, on: link)
    }

    /// Reads what a roster asked for (a page or a re-read), in order with the link's events.
    private func follow(_ outcome: RosterOutcome, channel: ChannelRef, on link: SessionLink) {
        let page: String?
        switch outcome {
        case .fetchPage(let next): page = next
        case .needsResync: page = nil
        case .applied, .ignored: return
        }
        request(Requests.GetOnlineUsers(channel, includeState: true, page: page, pageSize: 1000), on: link) { [weak self] reply in
            guard let self, case .success(let users) = reply else { return }
            let next = self.lock.withLock { () -> RosterOutcome? in
                if page == nil { return self.rosters[channel]?.resync(users: users.users, seq: users.seq, nextPage: users.nextPage) }
                return self.rosters[channel]?.merge(page: users.users, nextPage: users.nextPage)
            }
            guard let next else { return }
            self.publishUpdate(channel, cause: page == nil ? .resync : .page, changes: [])
            self.follow(next, channel: channel, on: link)
        }
    }

    /// Hands the channel's roster and status to its ``rosterUpdates(of:limit:)`` readers.
    private func publishUpdate(_ channel: ChannelRef, cause: RosterUpdate.Cause, changes: [RosterChange], status: ChannelStatus? = nil) {
        // Under the lock, so that readers see updates in the order they were made.
        lock.withLock {
            guard let stream = rosterStreams[channel], stream.readerCount > 0,
                  let roster = rosters[channel] ?? (intents.entries[channel] != nil ? Roster(channel) : nil),
                  let status = status ?? intents.entries[channel]?.status else { return }
            stream.yield(RosterUpdate(channel: channel, roster: roster, status: status, cause: cause, changes: changes))
        }
    }
}
