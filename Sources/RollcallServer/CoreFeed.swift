import RollcallCore

/// What the transport is feeding the core (``BrokerServer/feed(_:)``): events wait here while
/// an action list is being applied, so the broker is never re-entered.
struct CoreFeed {
    /// Events to hand to the broker, in order (the one being handled included).
    var pending: [InboundEvent] = []
    /// True while ``BrokerServer/feed(_:)`` is applying actions.
    var isFeeding = false
    /// The connection whose message the core is handling (during `feed` of `.received`): while
    /// busy it is not held for the coalescing window but written at the end of the loop turn,
    /// because it is waiting for the reply (``WriteCoalescer/writeAtEndOfTurn(_:)``).
    var requester: ConnectionID?
}
