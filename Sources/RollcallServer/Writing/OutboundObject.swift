/// What the transport can tell about an encoded object from its first bytes, without parsing
/// it. The core's encoder writes a reply's `id` first (`{"id":7,"ok":true,…}`, PROTOCOL §2)
/// and an event's `event` first (`{"event":"presence",…}`).
enum OutboundObject {
    private static let replyPrefix: [UInt8] = Array(#"{"id":"#.utf8)

    /// True for a reply to a request: a client is waiting for it.
    static func isReply(_ bytes: [UInt8]) -> Bool { bytes.starts(with: replyPrefix) }
}
