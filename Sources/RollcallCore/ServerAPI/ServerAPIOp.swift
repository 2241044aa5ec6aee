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
}
