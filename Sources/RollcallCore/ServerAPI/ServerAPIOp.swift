/// Every op of the server API (PROTOCOL §10), from the path `POST /api/v1/<op>`. A name that
/// is not here (WebSocket-only ops such as `join` included) is `UNKNOWN_OP`, 404.
public enum ServerAPIOp: String, Sendable, CaseIterable {
    /// `publish {channel, channelType?, message, publisher?}` → `{recipients}`.
    case publish
    /// `getOnlineUsers`, as over WebSocket.
    case getOnlineUsers
    /// `getState`, as over WebSocket.
    case getState
    /// `getUserChannels`, as over WebSocket.
    case getUserChannels
    /// `getUserStatus`, as over WebSocket.
    case getUserStatus
    /// `getChannels {prefix?, page?, pageSize?}` → `{channels, nextPage}`.
    case getChannels
    /// `disconnectUser {userId, reason?}` → `{sessions}`.
    case disconnectUser
    /// `getInfo {}` → `{version, nodes, channels, sessions}`.
    case getInfo

    /// The members a body of this op may have. Any other member is refused with
    /// `INVALID_REQUEST` (docs/protocol.md, "Server API"): a misspelt optional argument is
    /// an error, never silently ignored; `docs/api/openapi.yaml` says `additionalProperties: false`.
    public var arguments: [String] {
        switch self {
        case .publish: ["channel", "channelType", "message", "publisher"]
        case .getOnlineUsers: ["channel", "channelType", "includeUserId", "includeState", "page", "pageSize"]
        case .getState: ["channel", "channelType", "userId"]
        case .getUserChannels: ["userId"]
        case .getUserStatus: ["userIds"]
        case .getChannels: ["prefix", "page", "pageSize"]
        case .disconnectUser: ["userId", "reason"]
        case .getInfo: []
        }
    }

    /// True when `member` is one of ``arguments`` (compared byte by byte).
    func takes(_ member: String) -> Bool {
        arguments.contains { $0.utf8.elementsEqual(member.utf8) }
    }
}
