import RollcallProtocol

/// Listings: `getOnlineUsers` pages and the members of snapshots. Both show the roster **as
/// of the channel's last emitted event** (PROTOCOL §4), the one `seq` names: in announce
/// mode that is the members now (every change is an event at once); in interval mode the
/// changes waiting for the next `interval` event are not shown yet — not the users who
/// joined since, and the users who left since are still listed, with their state and info
/// at that event. So a reader that starts from a listing and applies the events after its
/// `seq` holds the exact roster, and a user who joins and leaves between two events never
/// appears anywhere.
///
/// The one exception is the reader's own user, when it is a member now but was not at the
/// last event (it joined since): snapshots and pages show it, with its current state, in its
/// byte-order place, as if its join were already reported, and count it in `occupancy` /
/// `totalOccupancy`. The next `interval` event lists that join; applying it changes nothing.
/// The server API has no such reader.
extension PresenceEngine {
    /// `getOnlineUsers {channel, channelType?, includeUserId?, includeState?, page?, pageSize?}`
    /// → `{totalOccupancy, seq, users, nextPage}`, as of the last event (see above); one page
    /// costs O(pageSize · log n), or a copy when another reader read it since that event.
    /// `seq` is the channel's presence `seq` (0 for a channel with no member, 1.1).
    func getOnlineUsers(_ request: GetOnlineUsersRequest) throws(BrokerError) -> JSON {
        guard let channel = channels[request.channel] else {
            return .object(["totalOccupancy": 0, "seq": 0, "users": [], "nextPage": nil])
        }
        let seq = JSON.int(channel.seq)
        guard request.includeUserId else {
            let own = request.viewer.flatMap(channel.entryIfJoinedSinceLastEvent) == nil ? 0 : 1
            return .object(["totalOccupancy": .int(channel.occupancyAtLastEvent + own), "seq": seq, "users": [], "nextPage": nil])
        }
        let shown = rosterArray(
            of: channel, after: request.after, limit: request.pageSize, includeState: request.includeState, viewer: request.viewer)
        let nextPage: JSON = shown.more ? shown.last.map { .string(PageCursor.encode(after: $0)) } ?? nil : nil
        return .object(["totalOccupancy": .int(shown.occupancy), "seq": seq, "users": .encoded(shown.bytes), "nextPage": nextPage])
    }

    /// Up to `limit` users after `cursor` of the roster as of the last event, encoded, with
    /// `viewer`'s own user spliced in when it joined since; whether more follow, the last
    /// user shown, and the roster's size for this viewer.
    func rosterArray(of channel: Channel, after cursor: Name?, limit: Int, includeState: Bool, viewer: Name?)
        -> (bytes: [UInt8], more: Bool, last: Name?, occupancy: Int)
    {
        let page = rosterPage(of: channel, after: cursor, limit: limit, includeState: includeState)
        let own = viewer.flatMap(channel.entryIfJoinedSinceLastEvent)
        var insert: RosterPage.EncodedEntry?
        if let own, cursor.map({ $0 < own.userId }) ?? true {
            insert = RosterPage.EncodedEntry(own, includeState: includeState)
        }
        let array = page.array(inserting: insert, limit: limit)
        return (array.bytes, array.more, array.last, channel.occupancyAtLastEvent + (own == nil ? 0 : 1))
    }

    /// Up to `limit` users after `cursor` of the roster as of the last event, from the
    /// channel's ``ListingCache`` or encoded (and kept) now: O(limit · log n).
    func rosterPage(of channel: Channel, after cursor: Name?, limit: Int, includeState: Bool) -> RosterPage {
        let key = ListingCache.Key(after: cursor, pageSize: limit, includeState: includeState, seq: channel.seq)
        if let cached = channel.listingCache.page(key) { return cached }
        var entries: [RosterEntry] = []
        entries.reserveCapacity(min(limit, channel.occupancyAtLastEvent))
        var more = false
        channel.order.forEach(after: cursor) { user in
            guard entries.count < limit else {
                more = true
                return false
            }
            entries.append(channel.entryAtLastEvent(user))
            return true
        }
        let page = RosterPage(entries: entries, includeState: includeState, more: more)
        // In interval mode every joiner's snapshot copies the first page: keep it at any size.
        channel.listingCache.keep(
            page, for: key, occupancy: channel.occupancyAtLastEvent, evenIfSmall: cursor == nil && channel.mode == .interval)
        return page
    }
}
