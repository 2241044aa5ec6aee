/// Receives measurements from the core: how long each request took and how many sessions
/// each event was queued for. The transport plugs its metrics backend in; nil records nothing.
public protocol BrokerInstrumentation: AnyObject {
    /// One request was handled: what it is called (``RequestLabel``: its op, `invalid` when
    /// it could not be decoded) and the core's handling time in nanoseconds of the monotonic clock.
    func requestHandled(_ request: RequestLabel, nanoseconds: UInt64)
    /// One event was encoded once and queued for `recipients` sessions.
    func eventFannedOut(recipients: Int)
}
