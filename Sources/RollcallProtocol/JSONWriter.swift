/// Writes compact JSON into a byte buffer.
///
/// Output never contains a raw newline (strings escape it), which is what lets the broker
/// batch several objects into one frame separated by `\n`. Use the structural methods to
/// build events without materialising a ``JSON`` tree:
///
///     var w = JSONWriter()
///     w.beginObject()
///     w.key("event"); w.string("presence")
///     w.endObject()
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    private var needsComma = false

    /// A writer with an empty buffer of the given capacity.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// Starts an object (`{`).
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Ends an object (`}`).
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Starts an array (`[`).
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Ends an array (`]`).
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object key; the next value call writes its value.
    public mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes a string value.
    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    /// Writes an integer value.
    public mutating func int(_ value: Int) {
        separate()
        appendInteger(value)
        needsComma = true
    }

    /// Writes a boolean value.
    public mutating func bool(_ value: Bool) {
        separate()
        if value { bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes a number literal.
    public mutating func number(_ value: JSONNumber) {
        separate()
        bytes.append(contentsOf: value.literal.utf8)
        needsComma = true
    }

    /// Writes an already encoded compact JSON value verbatim.
    ///
    /// The caller guarantees `encoded` is one valid compact JSON value without raw newlines.
    public mutating func raw(_ encoded: some Sequence<UInt8>) {
        separate()
        bytes.append(contentsOf: encoded)
        needsComma = true
    }

    /// Writes any JSON value.
    public mutating func value(_ value: JSON) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let n): number(n)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .encoded(let bytes):
            raw(bytes)
        case .object(let object):
            beginObject()
            for member in object.members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    /// Writes a `{key: string}` object, keys in the given order.
    public mutating func stringMap<S: Sequence>(_ pairs: S) where S.Element == (key: String, value: String) {
        beginObject()
        for pair in pairs {
            key(pair.key)
            string(pair.value)
        }
        endObject()
    }

    private mutating func appendInteger(_ value: Int) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            while count > 0 {
                count -= 1
                bytes.append(buffer[count])
            }
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ string: String) {
        // Native strings (all the broker builds) expose their UTF-8 in place; others are copied.
        if string.utf8.withContiguousStorageIfAvailable({ appendQuoted(utf8: $0) }) == nil {
            var copy = string
            copy.withUTF8 { appendQuoted(utf8: $0) }
        }
    }

    /// Appends `"…"`, escaping `"`, `\\` and control characters; runs that need no escape
    /// (usually the whole string) are copied in one piece.
    private mutating func appendQuoted(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        var offset = 0
        let count = utf8.count
        while offset < count {
            let byte = utf8[offset]
            if byte >= 0x20, byte != 0x22, byte != 0x5C {
                offset += 1
                continue
            }
            if runStart < offset { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<offset])) }
            switch byte {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
            }
            offset += 1
            runStart = offset
        }
        if runStart < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count])) }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSON {
    /// The compact encoding of this value.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }

    /// The compact encoding as a string.
    public var compactString: String { String(decoding: encoded(), as: UTF8.self) }
}
