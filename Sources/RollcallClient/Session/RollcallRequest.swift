import RollcallProtocol

/// One request of the protocol with its typed result (PROTOCOL §3–§6).
public protocol RollcallRequest: Sendable {
    /// What the reply's `result` decodes to.
    associatedtype Result: Decodable & Sendable
    /// The `op` on the wire, from the protocol's one vocabulary.
    static var op: Op { get }
    /// The members after `id` and `op`.
    var arguments: JSONObject { get }
    /// Decodes the `result` of a success reply; throws when it has the wrong shape. The
    /// default decodes ``Result`` from the whole `result` object.
    static func decode(_ result: JSON) throws(DecodingError) -> Result
}

extension RollcallRequest {
    public static func decode(_ result: JSON) throws(DecodingError) -> Result { try result.decode(Result.self) }
}

/// A request whose result is `{}` (or ignored).
public struct Done: Codable, Sendable, Equatable {
    /// The empty result.
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {}
}

/// A `{channel, channelType}` pair.
public struct ChannelRef: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The channel name.
    public var channel: String
    /// `message` (the default) or `stream`.
    public var channelType: ChannelType
    /// A channel of a type.
    public init(_ channel: String, type channelType: ChannelType = .message) {
        self.channel = channel
        self.channelType = channelType
    }

    enum CodingKeys: String, CodingKey { case channel, channelType }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        channel = try c.decode(String.self, forKey: .channel)
        channelType = try c.decode(ChannelType.self, forKey: .channelType, default: .message)
    }

    var members: [(key: String, value: JSON)] { [("channel", .string(channel)), ("channelType", .string(channelType.rawValue))] }

    public var description: String { channelType == .message ? channel : "\(channel) (\(channelType))" }
}

/// An id of a batch op that failed, with its code.
public struct FailedUser: Codable, Sendable, Equatable {
    /// The user id as sent.
    public var userId: String
    /// The error code as sent, e.g. `FORBIDDEN`.
    public var code: String
    /// The typed code, nil for one this client does not know.
    public var errorCode: ErrorCode? { ErrorCode(rawValue: code) }
    /// A failed id.
    public init(userId: String, code: String) {
        self.userId = userId
        self.code = code
    }
}

extension JSON {
    static func stringMap(_ map: [String: String]) -> JSON {
        .object(JSONObject(map.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSON.string($0.value)) }))
    }
}
