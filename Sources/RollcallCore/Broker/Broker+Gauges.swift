/// Sizes of the broker's state, read by `/metrics`.
extension Broker {
    /// Sessions held after an abnormal drop, waiting to be resumed or to time out.
    package var heldSessionCount: Int { heldSessions.count }

    /// Channels that exist now (a channel exists while it has a member or a pending change).
    package var channelCount: Int { presence.channels.count }

    /// Channels with an interval flush pending (channels in interval mode with changes).
    package var pendingIntervalFlushes: Int { presence.flushes.count }

    /// User-status subscriptions held now (all subscribers, not yet expired); in cluster mode,
    /// the whole cluster's, as of the last reaper tick (they live in Redis).
    package var subscriptionCount: Int { userStatuses.subscriptionCount }
}
