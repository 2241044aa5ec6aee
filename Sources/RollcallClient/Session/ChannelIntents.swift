/// Where a session is with one channel the app joined (``RollcallSession/status(of:)``).
public enum ChannelStatus: Sendable, Equatable {
    /// The join is on its way (or waits for the next login when offline).
    case joining
    /// The broker accepted the join; the roster follows the channel.
    case joined
    /// The join was answered with an error that may pass (`RATE_LIMITED`, `UNAVAILABLE`,
    /// `INTERNAL`, `TIMEOUT`): it is sent again after `seconds` (the reply's `retryAfterMs`
    /// when it had one, else the reconnect backoff).
    case retrying(after: Double, error: RollcallError)
    /// A join the session sent by itself after a reconnect was refused (e.g. `FORBIDDEN` after
    /// a token change, `TOO_MANY_CHANNELS`): the channel and its roster are kept, and the join
    /// is tried again after the next login. The session goes on.
    case failed(RollcallError)
}

/// The channels the app asked for, and the joins the session owes for them, as a value. The
/// app's ``join(_:online:now:)`` and ``leave(_:online:)``, a join's answer, a retry timer and a
/// login after a reconnect move it; it returns the ``Action``s the session carries out (send a
/// join, schedule a retry, tell the app). Like ``SessionLifecycle`` it does no I/O and reads no
/// clock (`ChannelIntentsTests`).
///
/// A rejoin never ends the session: an error that may pass is retried honouring `retryAfterMs`,
/// one that will not is kept as ``ChannelStatus/failed(_:)`` and tried again after the next
/// login, and a join cut by a lost link stays ``ChannelStatus/joining`` and is sent again after
/// the next login. A roster is never dropped without the app being told: only ``leave(_:online:)``
/// and a refusal of the app's own first join (which its `join` call throws) remove a channel.
struct ChannelIntents: Sendable, Equatable {
    /// One channel the app is in, or joining.
    struct Entry: Sendable, Equatable {
        /// The join to send (the app's last call for the channel).
        var request: Requests.Join
        var status: ChannelStatus = .joining
        /// Failed attempts in a row (for the backoff of retries without `retryAfterMs`).
        var failures = 0
        /// The link a join is in flight on, if any.
        var inFlight: Int?
        /// The app's join has not succeeded yet: a refusal is the app's to hear (and the
        /// channel goes), not a rejoin to keep.
        var appWaiting = true
    }

    /// What the session does.
    enum Action: Sendable, Equatable {
        /// Send the channel's join on `link`.
        case sendJoin(ChannelRef, link: Int)
        /// Send a leave on `link`.
        case sendLeave(ChannelRef, link: Int)
        /// Call ``retryTimerFired(_:link:now:)`` for the channel at monotonic time `at`.
        case scheduleRetry(ChannelRef, at: Double)
        /// The channel's status changed.
        case status(ChannelRef, ChannelStatus)
        /// The join succeeded: resolve the app's `join` calls waiting for it.
        case joined(ChannelRef, JoinResult)
        /// The app's join was refused: its `join` calls throw; the channel is removed.
        case refused(ChannelRef, RollcallError)
        /// The channel was left (or refused): forget its roster, end its update streams.
        case removed(ChannelRef)
    }

    private(set) var entries: [ChannelRef: Entry] = [:]
    let reconnect: ReconnectPolicy

    init(reconnect: ReconnectPolicy) {
        self.reconnect = reconnect
    }

    /// The app joins (again): the last call wins. Sent at once on `online` (a link), else after
    /// the next login.
    mutating func join(_ request: Requests.Join, online link: Int?, now: Double) -> [Action] {
        let channel = request.channel
        var entry = entries[channel] ?? Entry(request: request)
        entry.request = request
        entry.status = .joining
        entry.failures = 0
        if entries[channel]?.status != .joined { entry.appWaiting = true }
        var actions: [Action] = [.status(channel, .joining)]
        if let link {
            entry.inFlight = link
            actions.append(.sendJoin(channel, link: link))
        } else {
            entry.inFlight = nil
        }
        entries[channel] = entry
        return actions
    }

    /// The app leaves: the channel goes at once (its waiting joins throw); a leave is sent when online.
    mutating func leave(_ channel: ChannelRef, online link: Int?) -> [Action] {
        guard entries.removeValue(forKey: channel) != nil else { return link.map { [.sendLeave(channel, link: $0)] } ?? [] }
        return [.removed(channel)] + (link.map { [.sendLeave(channel, link: $0)] } ?? [])
    }

    /// A join sent on `link` was answered (or failed because the link went).
    mutating func joinAnswered(_ channel: ChannelRef, link: Int, result: Result<JoinResult, RollcallError>, now: Double) -> [Action] {
        guard var entry = entries[channel], entry.inFlight == link else { return [] }
        entry.inFlight = nil
        switch result {
        case .success(let joined):
            entry.status = .joined
            entry.failures = 0
            entry.appWaiting = false
            entries[channel] = entry
            return [.status(channel, .joined), .joined(channel, joined)]
        case .failure(let error) where Self.isRetryable(error):
            let delay = error.retryAfterMs.map { Double($0) / 1000 } ?? reconnect.delay(attempt: entry.failures)
            entry.failures += 1
            entry.status = .retrying(after: delay, error: error)
            entries[channel] = entry
            return [.status(channel, entry.status), .scheduleRetry(channel, at: now + delay)]
        case .failure(.connection):
            // The link went before the reply: still joining; sent again after the next login.
            entries[channel] = entry
            return []
        case .failure(let error):
            if entry.appWaiting {
                entries[channel] = nil
                return [.refused(channel, error), .removed(channel)]
            }
            entry.status = .failed(error)
            entry.failures += 1
            entries[channel] = entry
            return [.status(channel, entry.status)]
        }
    }

    /// A retry's time came: send the join again (or wait for the next login when offline).
    mutating func retryTimerFired(_ channel: ChannelRef, link: Int?, now: Double) -> [Action] {
        guard var entry = entries[channel], case .retrying = entry.status, entry.inFlight == nil else { return [] }
        entry.status = .joining
        var actions: [Action] = [.status(channel, .joining)]
        if let link {
            entry.inFlight = link
            actions.append(.sendJoin(channel, link: link))
        }
        entries[channel] = entry
        return actions
    }

    /// The link went: joins in flight stay `joining` and are sent again after the next login.
    mutating func linkLost(_ link: Int) {
        for (channel, entry) in entries where entry.inFlight == link { entries[channel]?.inFlight = nil }
    }

    /// A login after a reconnect, on `link`. Not resumed: every channel is joined again (failed
    /// ones too). Resumed: the broker kept the session's `channels`; the ones the app has left
    /// meanwhile are left, and joins the session does not hold (made offline, cut, failed) are sent.
    mutating func restore(link: Int, resumed: Bool, channels: [ChannelRef], now: Double) -> [Action] {
        var actions: [Action] = []
        let held = Set(channels)
        if resumed {
            for channel in channels where entries[channel] == nil { actions.append(.sendLeave(channel, link: link)) }
        }
        for channel in entries.keys.sorted(by: { ($0.channel, $0.channelType.rawValue) < ($1.channel, $1.channelType.rawValue) }) {
            guard var entry = entries[channel] else { continue }
            if resumed, held.contains(channel), entry.status == .joined { continue }
            entry.status = .joining
            entry.inFlight = link
            entries[channel] = entry
            actions.append(.status(channel, .joining))
            actions.append(.sendJoin(channel, link: link))
        }
        return actions
    }

    /// Errors a join may meet that pass by themselves: sent again later.
    static func isRetryable(_ error: RollcallError) -> Bool {
        switch error.code {
        case "RATE_LIMITED", "UNAVAILABLE", "INTERNAL", "TIMEOUT": true
        default: false
        }
    }
}
