/// The opaque `nextPage` cursor of `getOnlineUsers`, a truncated snapshot and
/// `getSubscriptions`: the
/// lowercase hex of the last user id returned, behind a version prefix. The next page starts
/// at the first user id greater than it, so a user present for the whole scan appears once.
package enum PageCursor {
    private static let prefix = "u1."
    private static let hex = Array("0123456789abcdef".utf8)

    /// The cursor after `name`.
    package static func encode(after name: Name) -> String {
        encode(name, behind: prefix)
    }

    /// The user id a cursor points after; nil when it is not a cursor this broker made.
    package static func decode(_ cursor: String) -> Name? {
        decode(cursor, behind: prefix)
    }

    /// `prefix` followed by the lowercase hex of `name`'s UTF-8.
    static func encode(_ name: Name, behind prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        for byte in name.string.utf8 {
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The name whose hex follows `prefix` in `cursor`; nil when the cursor does not start
    /// with `prefix` or the rest is not the hex of a valid name.
    static func decode(_ cursor: String, behind prefix: String) -> Name? {
        let utf8 = Array(cursor.utf8)
        let prefixBytes = Array(prefix.utf8)
        guard utf8.count > prefixBytes.count, utf8.starts(with: prefixBytes) else { return nil }
        let digits = utf8[prefixBytes.count...]
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var high: UInt8?
        for digit in digits {
            guard let value = nibble(digit) else { return nil }
            if let h = high {
                bytes.append(h << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return Name(text)
    }

    /// Index of the first element of sorted `all` strictly after `after` (binary search).
    package static func firstIndex(after: Name, in all: [Name]) -> Int {
        var low = 0, high = all.count
        while low < high {
            let mid = (low + high) / 2
            if all[mid] <= after { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
