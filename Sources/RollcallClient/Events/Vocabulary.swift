/// A word of the protocol's open vocabularies: a string that decodes and encodes as itself
/// (the standard library's `RawRepresentable` coding), with named static values for the words
/// this client knows, so that a word a later broker adds still decodes.
public protocol OpenVocabulary: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible where RawValue == String {
    init(rawValue: String)
}

extension OpenVocabulary {
    public var description: String { rawValue }
}

/// A channel's type (PROTOCOL §4): ``message`` (the default) or ``stream``. A struct with
/// static members rather than an enum, so that a type a later broker adds still decodes.
public struct ChannelType: OpenVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `message`: anyone may publish; the default.
    public static let message = ChannelType(rawValue: "message")
    /// `stream`: only members publish.
    public static let stream = ChannelType(rawValue: "stream")
}

/// How a channel announces presence changes (PROTOCOL §4): ``announce`` (each change as it
/// happens) or ``interval`` (one batched event per interval).
public struct PresenceMode: OpenVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Every join, leave, timeout and state change is sent as it happens.
    public static let announce = PresenceMode(rawValue: "announce")
    /// Changes are sent as one `interval` event every `presence.intervalSeconds`.
    public static let interval = PresenceMode(rawValue: "interval")
}

/// A user's status across devices (PROTOCOL §6).
public struct UserStatus: OpenVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// At least one session, held ones included.
    public static let online = UserStatus(rawValue: "online")
    /// Logged in before, no session now, no logout.
    public static let offline = UserStatus(rawValue: "offline")
    /// Logged out, or never seen.
    public static let loggedOut = UserStatus(rawValue: "loggedOut")
}

import RollcallProtocol

extension KeyedDecodingContainer {
    /// A channel state (`{k: v}`, PROTOCOL §4: values are strings). A value of another kind, which
    /// the broker never sends, is kept as its compact JSON text rather than failing the event.
    func decodeState(forKey key: Key) throws -> [String: String]? {
        guard let object = try decodeIfPresent(JSON.self, forKey: key)?.objectValue else { return nil }
        var state: [String: String] = [:]
        for member in object.members { state[member.key] = member.value.stringValue ?? member.value.compactString }
        return state
    }

    /// A member that may be absent or null, with a default.
    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key, default fallback: Value) throws -> Value {
        try decodeIfPresent(type, forKey: key) ?? fallback
    }
}
