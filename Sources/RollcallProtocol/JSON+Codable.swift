/// Any JSON value as a `Codable` field: a message payload, a token's `info` object. Encoded and
/// decoded as the JSON it is, through any `Encoder`/`Decoder` (Foundation's `JSONEncoder` and
/// `JSONDecoder` included). Objects decoded by a keyed container come back in the decoder's key
/// order, which Foundation does not promise to be the written one; numbers that are integers
/// keep their literal, others round-trip through `Double`.
extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var object = JSONObject()
            for key in keyed.allKeys { object.members.append((key.stringValue, try keyed.decode(JSON.self, forKey: key))) }
            self = .object(object)
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var elements: [JSON] = []
            while !unkeyed.isAtEnd { elements.append(try unkeyed.decode(JSON.self)) }
            self = .array(elements)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? single.decode(Int.self) {
            self = .number(JSONNumber(int))
        } else if let double = try? single.decode(Double.self) {
            self = .number(JSONNumber(double))
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let number):
            var single = encoder.singleValueContainer()
            if let int = number.intValue { try single.encode(int) } else { try single.encode(number.doubleValue ?? 0) }
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .array(let elements):
            var unkeyed = encoder.unkeyedContainer()
            for element in elements { try unkeyed.encode(element) }
        case .object(let object):
            var keyed = encoder.container(keyedBy: AnyKey.self)
            for member in object.members { try keyed.encode(member.value, forKey: AnyKey(member.key)) }
        case .encoded(let bytes):
            // Written by the broker only; decode it to encode it as a tree.
            try (JSONParser.parseOrNull(bytes)).encode(to: encoder)
        }
    }
}

/// A coding key for any member name.
struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension JSONParser {
    /// The value of `bytes`, or `null` when they do not parse.
    static func parseOrNull(_ bytes: [UInt8]) -> JSON {
        (try? parse(bytes)) ?? .null
    }
}
