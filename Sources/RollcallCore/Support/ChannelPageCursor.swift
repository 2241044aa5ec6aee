/// The opaque `nextPage` cursor of the server API's `getChannels` (PROTOCOL §10): the type
/// and name of the last channel returned, as `c1.m.` or `c1.s.` and the lowercase hex of the
/// name (``PageCursor``'s encoding). The next page starts at the first channel after it in
/// listing order (`message` channels, then `stream` channels, each in byte order of name),
/// so a channel live for the whole scan appears exactly once.
package enum ChannelPageCursor {
    private static func prefix(_ type: ChannelType) -> String {
        type == .message ? "c1.m." : "c1.s."
    }

    /// The cursor after `key`.
    package static func encode(after key: ChannelKey) -> String {
        PageCursor.encode(key.name, behind: prefix(key.type))
    }

    /// The channel a cursor points after; nil when it is not a cursor this broker made.
    static func decode(_ cursor: String) -> ChannelKey? {
        for type in [ChannelType.message, .stream] {
            if let name = PageCursor.decode(cursor, behind: prefix(type)) { return ChannelKey(type: type, name: name) }
        }
        return nil
    }
}
