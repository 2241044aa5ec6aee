import RollcallProtocol

// The arguments of the server API's own ops (PROTOCOL §10), decoded and validated from the
// request body before any state is read, as the WebSocket ops' requests are. The ops the
// API shares with WebSocket (`getOnlineUsers`, `getState`, …) use the WebSocket requests.

extension Request {
    /// A server API body as a request: one JSON object, its members the op's arguments. An
    /// empty body (or only whitespace) is `{}`. Not JSON: `INVALID_JSON`; JSON but not an
    /// object, or a member the op does not take (``ServerAPIOp/arguments``): `INVALID_REQUEST`.
    static func serverAPIBody(_ bytes: [UInt8], op: ServerAPIOp) throws(BrokerError) -> Request {
        let isBlank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let value: JSON
        if isBlank {
            value = .object([:])
        } else {
            do {
                value = try JSONParser.parse(bytes)
            } catch {
                throw BrokerError(.invalidJSON, "the body is not valid JSON: \(error)")
            }
        }
        guard case .object(let object) = value else {
            throw BrokerError(.invalidRequest, "the body must be a JSON object")
        }
        if let unknown = object.members.first(where: { !op.takes($0.key) }) {
            let takes = op.arguments.isEmpty ? "no member" : op.arguments.joined(separator: ", ")
            throw BrokerError(.invalidRequest, "\(op.rawValue) has no argument \(String(reflecting: unknown.key)) (it takes \(takes))")
        }
        return Request(id: .null, op: nil, opName: op.rawValue, arguments: object)
    }
}

/// `publish {channel, channelType?, message, publisher?}` from the server: the WebSocket
/// ``PublishRequest`` plus the name the `message` event carries as `publisher` (a valid user
/// id; default `server`).
package struct ServerPublishRequest: Sendable {
    /// The name used when the body gives none.
    static let defaultPublisher = Name(unchecked: "server")

    package let publish: PublishRequest
    package let publisher: Name

    init(_ request: Request) throws(BrokerError) {
        publish = try PublishRequest(request)
        if let raw = try request.optionalString("publisher") {
            guard let name = Name(raw) else {
                throw BrokerError(.invalidArgument, "publisher must be 1-128 bytes of UTF-8 without control characters")
            }
            publisher = name
        } else {
            publisher = Self.defaultPublisher
        }
    }
}

/// `getChannels {prefix?, page?, pageSize?}`.
package struct GetChannelsRequest: Sendable {
    /// Only channels whose name starts with it; nil (absent or empty): every channel.
    package let prefix: Name?
    /// The channel the page starts after (decoded `page`), nil for the first page.
    package let after: ChannelKey?
    package let pageSize: Int

    init(_ request: Request) throws(BrokerError) {
        let rawPrefix = try request.optionalString("prefix") ?? ""
        if rawPrefix.isEmpty {
            prefix = nil
        } else {
            guard let name = Name(rawPrefix) else {
                throw BrokerError(.invalidArgument, "prefix must be at most 128 bytes of UTF-8 without control characters")
            }
            prefix = name
        }
        pageSize = try request.optionalInteger("pageSize", in: 1...1000) ?? 100
        let page = try request.optionalString("page") ?? ""
        if page.isEmpty {
            after = nil
        } else {
            guard let key = ChannelPageCursor.decode(page) else { throw BrokerError(.invalidArgument, "page is not a valid cursor") }
            after = key
        }
    }
}

/// `disconnectUser {userId, reason?}`; `reason` goes in the 4403 close frame, so it is at
/// most 123 bytes (a close frame's limit).
package struct DisconnectUserRequest: Sendable {
    /// The reason when the body gives none.
    package static let defaultReason = "disconnected by the server"
    /// The longest reason a close frame carries, in bytes.
    static let maxReasonBytes = 123

    package let userId: Name
    package let reason: String

    init(_ request: Request) throws(BrokerError) {
        userId = try request.name("userId")
        let given = try request.optionalString("reason") ?? ""
        guard given.utf8.count <= Self.maxReasonBytes else {
            throw BrokerError(.invalidArgument, "reason must be at most \(Self.maxReasonBytes) bytes")
        }
        reason = given.isEmpty ? Self.defaultReason : given
    }
}
