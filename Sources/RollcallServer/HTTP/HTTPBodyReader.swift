/// Collects a request body chunk by chunk up to a limit. Past the limit it keeps nothing
/// (what it held is released) and only remembers that the body was too large.
public struct HTTPBodyReader {
    /// The largest body accepted, in bytes.
    public let limit: Int
    private var bytes: [UInt8] = []
    /// True once the body grew past ``limit``.
    public private(set) var overflowed = false

    /// A reader accepting at most `limit` bytes.
    public init(limit: Int) {
        self.limit = limit
    }

    /// Appends a chunk; returns false once the body is over the limit (this chunk or before).
    @discardableResult
    public mutating func append<Chunk: Collection>(_ chunk: Chunk) -> Bool where Chunk.Element == UInt8 {
        guard !overflowed else { return false }
        guard bytes.count + chunk.count <= limit else {
            overflowed = true
            bytes = []
            return false
        }
        bytes.append(contentsOf: chunk)
        return true
    }

    /// The body read so far; nil when it overflowed.
    public var body: [UInt8]? { overflowed ? nil : bytes }
}
