/// Every event a ``RollcallSession`` receives, typed, from the moment this reader was made
/// (``RollcallSession/events``). Each reader gets every event: several tasks may read the
/// session's events side by side, each from its own ``EventStream``.
///
/// Buffering: a reader has its own buffer of at most ``RollcallSession/eventBufferLimit``
/// undelivered events (``BufferPolicy/endReader(limit:)``). A reader that falls that far behind
/// is ended: it gets the events it holds, then its loop throws ``RollcallError/slowReader(limit:)``.
/// Nothing is dropped silently, and the session and the other readers never wait for it. Rosters
/// are kept by the session itself (``RollcallSession/roster(of:)``), so a reader that was ended
/// re-reads them and subscribes again.
///
/// Iterate it once: it is one reader, not a recipe for readers. It ends when the session closes.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = RollcallEvent
    let reader: ReaderBuffer<RollcallEvent>

    /// The iterator of one reader.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: ReaderBuffer<RollcallEvent>

        /// The next event; nil once the session closed; throws ``RollcallError/slowReader(limit:)``
        /// when this reader fell too far behind.
        public mutating func next() async throws -> RollcallEvent? {
            try await reader.next().get()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: reader) }
}

/// A stream whose latest element says everything (connection states, roster updates), for any
/// number of readers: each reader keeps the newest `limit` undelivered elements
/// (``BufferPolicy/keepNewest(limit:)``); a slow reader skips older ones and is never ended.
/// It ends when the session closes (or, for roster updates, when the channel is left).
public struct LatestStream<Element: Sendable>: AsyncSequence, Sendable {
    let reader: ReaderBuffer<Element>

    /// The iterator of one reader.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: ReaderBuffer<Element>

        /// The next element; nil at the end.
        public mutating func next() async -> Element? {
            switch await reader.next() {
            case .success(let element): element
            case .failure: nil
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: reader) }
}

/// One change of a channel's roster or status, as ``RollcallSession/rosterUpdates(of:limit:)``
/// hands it out: the whole roster after the change, so a reader that skipped updates still
/// shows the right members.
public struct RosterUpdate: Sendable {
    /// What changed the roster.
    public enum Cause: Sendable, Equatable {
        /// A presence event of this kind was applied.
        case event(PresenceKind)
        /// A `getOnlineUsers` page completing a truncated snapshot was merged.
        case page
        /// The roster was read again after a `seq` gap.
        case resync
        /// Only the channel's ``ChannelStatus`` changed.
        case status
    }

    /// The channel.
    public var channel: ChannelRef
    /// The roster after the change.
    public var roster: Roster
    /// The channel's status after the change.
    public var status: ChannelStatus
    /// What changed it.
    public var cause: Cause
    /// The edits this update made, in order (empty for ``Cause/status``).
    public var changes: [RosterChange]
    /// Updates this reader skipped just before this one because it was slow; their ``changes``
    /// are not repeated, but ``roster`` is whole.
    public var skipped = 0
}
