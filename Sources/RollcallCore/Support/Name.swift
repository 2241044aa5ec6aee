/// A user id or channel name: 1–128 bytes of UTF-8 without control characters
/// (PROTOCOL §3). Equality, hashing and ordering are by bytes, never by Unicode
/// canonical equivalence, so `"é"` and `"e\u{301}"` are different names.
public struct Name: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The name as text.
    public let string: String

    /// The longest name in bytes.
    public static let maxBytes = 128

    /// Validates `string`; nil when it is empty, too long or holds a control character.
    public init?(_ string: String) {
        let count = string.utf8.count
        guard count >= 1, count <= Name.maxBytes else { return nil }
        for scalar in string.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || (value >= 0x7F && value <= 0x9F) { return nil }
        }
        self.string = string
    }

    /// Wraps a string already known to be valid (e.g. read back from storage).
    public init(unchecked string: String) { self.string = string }

    public var description: String { string }

    public static func == (lhs: Name, rhs: Name) -> Bool {
        var a = lhs.string, b = rhs.string
        return a.withUTF8 { x in b.withUTF8 { y in x.count == y.count && (x.count == 0 || memcmpEqual(x, y)) } }
    }

    public func hash(into hasher: inout Hasher) {
        var s = string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public static func < (lhs: Name, rhs: Name) -> Bool {
        // Native strings (all of ours) expose their UTF-8 in place; the copy is a fallback.
        if let result = lhs.string.utf8.withContiguousStorageIfAvailable({ x in
            rhs.string.utf8.withContiguousStorageIfAvailable { y in compareBytes(x, y) < 0 }
        }), let ordered = result {
            return ordered
        }
        var a = lhs.string, b = rhs.string
        return a.withUTF8 { x in b.withUTF8 { y in compareBytes(x, y) < 0 } }
    }
}

@inline(__always)
private func memcmpEqual(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
    compareBytes(x, y) == 0
}

/// Lexicographic byte comparison: negative, zero or positive.
@inline(__always)
func compareBytes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
    let n = min(x.count, y.count)
    var i = 0
    while i < n {
        let a = x[i], b = y[i]
        if a != b { return a < b ? -1 : 1 }
        i += 1
    }
    return x.count - y.count
}
