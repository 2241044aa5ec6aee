/// A JSON value as it travels on the wire.
///
/// Numbers keep their literal text so that a huge or very precise number a client sends is
/// forwarded exactly as written. Objects keep their members in order; when a key repeats,
/// the last occurrence wins (see ``JSONObject/subscript(_:)``).
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSON])
    case object(JSONObject)
    /// A value already encoded as compact JSON (one value, no raw newline), written verbatim.
    /// The broker builds large replies this way instead of as a tree; the parser never
    /// produces it, and the accessors (``objectValue`` etc.) see it as none of the other kinds.
    case encoded([UInt8])
}

/// A JSON number, held as the validated literal it was written as.
public struct JSONNumber: Sendable, Equatable, CustomStringConvertible {
    /// The literal, e.g. `-12`, `3.5e10`.
    public let literal: String

    /// Wraps an already validated literal.
    public init(literal: String) { self.literal = literal }

    /// A number from an integer.
    public init(_ value: Int) { self.literal = String(value) }

    /// A number from a double; non-finite values are not JSON and become `0`.
    public init(_ value: Double) {
        if value.isFinite {
            if value == value.rounded(), abs(value) < 1e15 { self.literal = String(Int64(value)) }
            else { self.literal = "\(value)" }
        } else {
            self.literal = "0"
        }
    }

    /// The value when it is an integer that fits `Int` (no fraction, no exponent), else nil.
    public var intValue: Int? { Int(literal) }

    /// The value as a double (may lose precision or be infinite for huge literals).
    public var doubleValue: Double? { Double(literal) }

    public var description: String { literal }
}

/// The members of a JSON object, in the order they were written.
public struct JSONObject: Sendable, Equatable {
    /// Key/value pairs in order; keys may repeat in parsed input.
    public var members: [(key: String, value: JSON)]

    /// An empty object.
    public init() { members = [] }

    /// An object with these members.
    public init(_ members: [(key: String, value: JSON)]) { self.members = members }

    /// The value of the last member named `key`, or nil.
    ///
    /// Setting appends or replaces; setting nil removes every member with that key.
    public subscript(key: String) -> JSON? {
        get {
            var index = members.count - 1
            while index >= 0 {
                if members[index].key.utf8.elementsEqual(key.utf8) { return members[index].value }
                index -= 1
            }
            return nil
        }
        set {
            members.removeAll { $0.key.utf8.elementsEqual(key.utf8) }
            if let newValue { members.append((key, newValue)) }
        }
    }

    /// Number of members.
    public var count: Int { members.count }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSON {
    /// The kind of value in words (`a string`, `an object`), for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .encoded: "encoded JSON"
        }
    }

    /// The string payload, or nil for other kinds.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The object payload, or nil for other kinds.
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    /// The array payload, or nil for other kinds.
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    /// The boolean payload, or nil for other kinds.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The number payload, or nil for other kinds.
    public var numberValue: JSONNumber? { if case .number(let n) = self { return n } else { return nil } }
    /// True for `null`.
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Member lookup on objects; nil for other kinds.
    public subscript(key: String) -> JSON? { objectValue?[key] }

    /// An integer number.
    public static func int(_ value: Int) -> JSON { .number(JSONNumber(value)) }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(JSONObject(elements.map { ($0.0, $0.1) }))
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(elements.map { ($0.0, $0.1) })
    }
}
