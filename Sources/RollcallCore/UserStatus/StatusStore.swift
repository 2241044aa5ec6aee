/// Durable user-status data (subscriptions, custom statuses, last status and times).
///
/// STUB — to be designed with issue 4: a small protocol with a memory implementation here
/// and SQLite in `RollcallStorage` (Redis later).
public protocol StatusStore: AnyObject {}

/// Keeps durable data in memory only (`storage.path: null`, and tests).
public final class MemoryStatusStore: StatusStore {
    public init() {}
}
