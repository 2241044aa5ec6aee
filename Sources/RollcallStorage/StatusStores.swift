import RollcallCore

/// Opens the status store the configuration asks for.
public enum StatusStores {
    /// `storage.path` null → ``DiscardingStatusStore`` (the engine keeps everything in memory
    /// itself; nothing would ever read a second copy back); otherwise ``SQLiteStatusStore`` at that
    /// path (created if missing). Throws ``StatusStoreError`` (`corrupt` / `unwritable`, with a
    /// message naming the file) when the database cannot be used; the broker must not start.
    ///
    /// At shutdown the broker's `.shutdown` event flushes the store; an executable that also
    /// wants the writer thread stopped calls ``StatusStore/close()`` after that.
    public static func open(_ configuration: Configuration, clock: BrokerClock = SystemClock()) throws(StatusStoreError) -> any StatusStore {
        guard let path = configuration.storage.path else { return DiscardingStatusStore() }
        return try SQLiteStatusStore(path: path, clock: clock)
    }
}
