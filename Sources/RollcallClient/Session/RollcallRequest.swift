import RollcallProtocol

/// One request of the protocol with its typed result (PROTOCOL §3–§6).
public protocol RollcallRequest: Sendable {
    /// What the reply's `result` decodes to.
    associatedtype Result: Sendable
    /// The `op` on the wire.
    static var op: String { get }
    /// The members after `id` and `op`.
    var arguments: JSONObject { get }
    /// Decodes the `result` of a success reply; nil when it has the wrong shape.
    static func decode(_ result: JSON) -> Result?
}

/// A request whose result is `{}` (or ignored).
public struct Done: Sendable, Equatable {}

/// A `{channel, channelType}` pair.
public struct ChannelRef: Sendable, Hashable {
    /// The channel name.
    public var channel: String
    /// `message` or `stream`.
    public var channelType: String
    /// A channel of a type.
    public init(_ channel: String, type channelType: String = "message") {
        self.channel = channel
        self.channelType = channelType
    }
    init?(_ json: JSON) {
        guard let name = json["channel"]?.stringValue else { return nil }
        self.init(name, type: json["channelType"]?.stringValue ?? "message")
    }
    var members: [(key: String, value: JSON)] { [("channel", .string(channel)), ("channelType", .string(channelType))] }
}

/// An id of a batch op that failed, with its code.
public struct FailedUser: Sendable, Equatable {
    /// The user id as sent.
    public var userId: String
    /// The error code, e.g. `FORBIDDEN`.
    public var code: String
}

extension JSON {
    var int: Int? { numberValue?.intValue }
    var strings: [String] { (arrayValue ?? []).compactMap(\.stringValue) }
    var stringMap: [String: String] {
        var map: [String: String] = [:]
        for member in objectValue?.members ?? [] { map[member.key] = member.value.stringValue ?? member.value.compactString }
        return map
    }
    var failedUsers: [FailedUser] {
        (self["failed"]?.arrayValue ?? []).compactMap { entry in
            entry["userId"]?.stringValue.map { FailedUser(userId: $0, code: entry["code"]?.stringValue ?? "") }
        }
    }
    static func stringMap(_ map: [String: String]) -> JSON {
        .object(JSONObject(map.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSON.string($0.value)) }))
    }
}
