import RollcallProtocol

/// The roster pages of one channel encoded since its last presence event (``RosterPage``):
/// `getOnlineUsers` pages and the members of snapshots, which show the roster as of that
/// event. Many clients paging the same big roster (every late joiner of a join storm
/// completes its truncated snapshot this way) share one encoding per event.
///
/// The channel empties it when it emits an event (``Channel/listingChanged()``) and when a
/// member goes silently (shutdown); the channel's `seq` is also part of the key. In interval
/// mode a page thus lives for a whole interval, however many joins, leaves and state changes
/// wait for the next `interval` event.
///
/// Bounds: only pages of at least ``minimumNames`` users are kept (small pages are cheap to
/// encode; the one exception is the first page of a channel in interval mode, which every
/// joiner's snapshot copies), at most ``capacity(occupancy:)`` of them: 16, plus 2 per 1000 members, so that
/// every page of a roster read by 1000, with and without states, fits. Each page holds at
/// most 1000 entries (`getOnlineUsers`) or `presence.snapshotMaxMembers` (the snapshot), so
/// a channel of n members keeps at most about 16 pages plus twice its encoded roster. When
/// full, an arbitrary page makes room for the new one.
package struct ListingCache {
    /// A page's request shape and the channel's `seq` when it was read.
    package struct Key: Hashable {
        let after: Name?
        let pageSize: Int
        let includeState: Bool
        let seq: Int
    }

    static let minimumNames = 256
    private var pages: [Key: RosterPage] = [:]

    /// Most pages kept for a channel of `occupancy` members.
    static func capacity(occupancy: Int) -> Int { 16 + 2 * (occupancy / 1000) }

    /// Number of pages kept.
    var count: Int { pages.count }

    /// The page encoded for `key` since the last event, if any.
    func page(_ key: Key) -> RosterPage? { pages[key] }

    /// Keeps `page` for `key` unless it is small (and not `evenIfSmall`); evicts an arbitrary
    /// page when full.
    mutating func keep(_ page: RosterPage, for key: Key, occupancy: Int, evenIfSmall: Bool = false) {
        guard evenIfSmall || page.names.count >= Self.minimumNames else { return }
        while pages.count >= Self.capacity(occupancy: occupancy), pages[key] == nil {
            pages.remove(at: pages.startIndex)
        }
        pages[key] = page
    }

    /// Forgets every page.
    mutating func removeAll() {
        if !pages.isEmpty { pages.removeAll() }
    }
}
