import RollcallProtocol

/// The `getOnlineUsers` pages of one channel encoded since its listing last changed, so that
/// many clients paging the same big roster (every late joiner of a join storm completes its
/// truncated snapshot this way) share one encoding. Any member added or removed, or any state
/// change, empties it (``Channel/listingChanged()``); the page's `seq` is part of the key.
/// Only pages of at least ``minimumNames`` users are kept, at most ``capacity`` of them, so a
/// quiet broker holds little: one channel's cache is at most 16 pages.
struct ListingCache {
    /// A page's request shape and the channel's `seq` when it was read.
    struct Key: Hashable {
        let after: Name?
        let pageSize: Int
        let includeState: Bool
        let seq: Int
    }

    static let minimumNames = 256
    static let capacity = 16
    private var pages: [Key: JSON] = [:]

    /// The page encoded for `key` since the last change, if any.
    func page(_ key: Key) -> JSON? { pages[key] }

    /// Keeps `page` (of `names` users) for `key`, unless it is small or the cache is full.
    mutating func keep(_ page: JSON, names: Int, for key: Key) {
        guard names >= Self.minimumNames, pages.count < Self.capacity else { return }
        pages[key] = page
    }

    /// Forgets every page.
    mutating func removeAll() {
        if !pages.isEmpty { pages.removeAll() }
    }
}
