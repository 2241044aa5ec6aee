/// Pub/sub messages a node holds back while it may have been declared dead (``ClusterLink``),
/// in arrival order, up to ``limit``; past it, later ones are dropped and the overflow noted.
struct HeldBackMessages {
    /// The most messages held back (a node paused for `nodeTimeoutSeconds` under load).
    static let limit = 100_000

    private var messages: [(channel: [UInt8], payload: [UInt8])] = []
    private var overflowed = false

    var isEmpty: Bool { messages.isEmpty && !overflowed }

    mutating func append(channel: [UInt8], payload: [UInt8]) {
        guard messages.count < Self.limit else {
            overflowed = true
            return
        }
        messages.append((channel, payload))
    }

    /// Everything held back, and whether some were dropped over the limit; empties the hold.
    mutating func take() -> (messages: [(channel: [UInt8], payload: [UInt8])], overflowed: Bool) {
        defer {
            messages = []
            overflowed = false
        }
        return (messages, overflowed)
    }

    /// Drops everything held back; returns how many messages that was.
    @discardableResult
    mutating func discard() -> Int {
        take().messages.count
    }
}
