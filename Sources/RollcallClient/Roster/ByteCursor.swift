import Foundation

/// A read position in one compact JSON line, with the few moves ``PresenceScanner`` needs:
/// find a byte pattern, consume a byte, read or skip a string, skip any value.
/// Every move stays inside the buffer; a malformed line just ends the scan early.
struct ByteCursor {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private var atEnd: Bool { position >= bytes.count }

    /// Moves just past the next occurrence of `pattern`; returns where it started, nil (and
    /// the cursor unchanged) when absent.
    @discardableResult
    mutating func find(_ pattern: [UInt8]) -> Int? {
        guard let base = bytes.baseAddress, position < bytes.count else { return nil }
        guard let first = pattern.first else { return position }
        var from = position
        while from + pattern.count <= bytes.count {
            // memchr for the first byte, then compare the rest (memmem is not in Glibc's overlay).
            guard let hit = memchr(base + from, Int32(first), bytes.count - from - pattern.count + 1) else { return nil }
            let start = UnsafeRawPointer(hit) - base
            let equal = pattern.withUnsafeBytes { memcmp(base + start, $0.baseAddress!, $0.count) == 0 }
            if equal {
                position = start + pattern.count
                return start
            }
            from = start + 1
        }
        return nil
    }

    /// True when `pattern` occurs from here on (the cursor is not moved).
    func contains(_ pattern: [UInt8]) -> Bool {
        var other = self
        return other.find(pattern) != nil
    }

    /// The integer after the next occurrence of `key` from here on (the cursor is not moved).
    func integer(after key: [UInt8]) -> Int? {
        var other = self
        return other.findInteger(after: key)
    }

    /// The integer right after the next occurrence of `key`.
    mutating func findInteger(after key: [UInt8]) -> Int? {
        guard find(key) != nil else { return nil }
        _ = skipSpaces()
        var value = 0, digits = 0
        let negative = consume(UInt8(ascii: "-"))
        while !atEnd, bytes[position] >= 48, bytes[position] <= 57, digits < 18 {
            value = value * 10 + Int(bytes[position] - 48)
            position += 1; digits += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    /// Skips spaces; false at the end of the line (so it can lead a `while` condition).
    mutating func skipSpaces() -> Bool {
        while !atEnd {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return true
            }
        }
        return false
    }

    /// Consumes `byte` when it is next.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard !atEnd, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// After an opening quote: moves past the closing quote (escapes skipped).
    mutating func skipRestOfString() -> Bool {
        while !atEnd {
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "\"") { return true }
            if byte == UInt8(ascii: "\\") { position += 1 }
        }
        return false
    }

    /// After an opening quote: the string up to the closing quote (escapes kept as written;
    /// only used for short ASCII keys and type names).
    mutating func readRestOfString() -> String? {
        let start = position
        guard skipRestOfString() else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<(position - 1)]), as: UTF8.self)
    }

    /// `"key":` → `key`, the cursor after the colon.
    mutating func readKey() -> String? {
        guard skipSpaces(), consume(UInt8(ascii: "\"")), let key = readRestOfString(),
              skipSpaces(), consume(UInt8(ascii: ":")) else { return nil }
        return key
    }

    /// Skips one JSON value of any kind (nested arrays and objects by depth, strings by
    /// their quotes); false when the line ends first.
    mutating func skipValue() -> Bool {
        guard skipSpaces() else { return false }
        var depth = 0
        repeat {
            guard !atEnd else { return false }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard skipRestOfString() else { return false }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1; position += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                guard depth > 0 else { return true }
                depth -= 1; position += 1
            case UInt8(ascii: ","):
                if depth == 0 { return true }
                position += 1
            default:
                position += 1
            }
        } while depth > 0 || (!atEnd && !Self.endsScalar(bytes[position]))
        return true
    }

    private static func endsScalar(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
    }
}
