import RollcallProtocol

/// The broker's answer to one request: `{"id":…,"ok":true,"result":{…}}` or
/// `{"id":…,"ok":false,"error":{"code":…,"message":…}}`.
public struct Reply: Sendable, Equatable, CustomStringConvertible {
    /// The echoed request id (`null` when the broker could not read it).
    public let id: JSON
    /// True for a success reply.
    public let ok: Bool
    /// The `result` member (`null` on error replies).
    public let result: JSON
    /// The error code as written on the wire, e.g. `"TOO_MANY_KEYS"`.
    public let errorCodeText: String?
    /// The human-readable error message.
    public let errorMessage: String?
    /// `retryAfterMs` of a `RATE_LIMITED` error.
    public let retryAfterMs: Int?
    /// The whole reply object as received.
    public let raw: JSONObject

    /// Decodes a reply object (one carrying `ok`).
    public init(_ object: JSONObject) {
        raw = object
        id = object["id"] ?? .null
        ok = object["ok"]?.boolValue ?? false
        result = object["result"] ?? .null
        let error = object["error"]
        errorCodeText = error?["code"]?.stringValue
        errorMessage = error?["message"]?.stringValue
        retryAfterMs = error?["retryAfterMs"]?.numberValue?.intValue
    }

    /// The typed error code, nil on success or for a code this client does not know.
    public var errorCode: ErrorCode? { errorCodeText.flatMap(ErrorCode.init(rawValue:)) }

    /// `result[key]`, for brevity.
    public subscript(key: String) -> JSON? { result[key] }

    /// The compact JSON text of the reply.
    public var description: String { JSON.object(raw).compactString }
}

/// An event object pushed by the broker: `{"event":"presence", …}`.
public struct Event: Sendable, Equatable, CustomStringConvertible {
    /// The `event` member: `presence`, `message`, `userStatus`, `subscriptions`.
    public let name: String
    /// The whole event object.
    public let object: JSONObject

    /// Wraps an event object.
    public init(_ object: JSONObject) {
        self.object = object
        self.name = object["event"]?.stringValue ?? ""
    }

    /// A member of the event.
    public subscript(key: String) -> JSON? { object[key] }

    /// The `type` member of presence events (`join`, `leave`, `snapshot`, …).
    public var type: String? { object["type"]?.stringValue }

    /// The compact JSON text of the event.
    public var description: String { JSON.object(object).compactString }
}
