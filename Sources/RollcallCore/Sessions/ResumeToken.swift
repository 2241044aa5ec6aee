/// A session's single-use resume token: 128 random bits, written on the wire as 32 lowercase
/// hex digits (each 64-bit half least-significant nibble first).
///
/// Kept as two integers rather than a `String`, so a session and the directory's token index
/// hold 16 bytes inline instead of a heap-allocated string each (idle sessions are counted in
/// bytes: see the `idle` benchmark).
package struct ResumeToken: Hashable {
    let first: UInt64
    let second: UInt64

    private static let digits = Array("0123456789abcdef".utf8)

    /// A fresh token from `random` (two 64-bit draws).
    package init(using random: inout any RandomNumberGenerator) {
        first = random.next()
        second = random.next()
    }

    /// The token a client sent back, or nil when `text` is not 32 lowercase hex digits (then
    /// it cannot be one the broker issued).
    package init?(_ text: String) {
        let utf8 = text.utf8
        guard utf8.count == 32 else { return nil }
        var words: [UInt64] = [0, 0]
        for (index, byte) in utf8.enumerated() {
            let nibble: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            words[index / 16] |= nibble << (4 * UInt64(index % 16))
        }
        first = words[0]
        second = words[1]
    }

    /// The 32 hex digits sent to the client.
    package var text: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for word in [first, second] {
            var rest = word
            for _ in 0..<16 {
                bytes.append(Self.digits[Int(rest & 0xF)])
                rest >>= 4
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
