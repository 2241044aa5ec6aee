/// Errors the client library throws. Each case has a stable ``code``.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not `ws://host[:port][/path]`.
    case invalidURL(String)
    /// The WebSocket connection could not be established (refused, HTTP error, bad handshake).
    case connectFailed(String)
    /// Waiting for a reply, an event, the connection or its close took longer than allowed.
    case timeout(String)
    /// The connection is closed; nothing more can be sent or received.
    case closed(CloseInfo)
    /// The runtime could not be created or has been shut down.
    case runtimeUnavailable(String)
    /// The server answered with an error reply (used by `RollcallConnection.call(_:_:timeout:)`).
    case server(code: String, message: String)
    /// The transport cannot make WebSocket connections here (e.g. `URLSessionWebSocketTask` on a
    /// Linux whose libcurl was built without WebSocket support).
    case transportUnsupported(String)

    /// Whether the same attempt may succeed later: false for a bad URL, a transport that cannot
    /// do WebSockets here, or no runtime; true for a refused or dropped connection, a timeout.
    public var mayPass: Bool {
        switch self {
        case .invalidURL, .transportUnsupported, .runtimeUnavailable: false
        case .connectFailed, .timeout, .closed, .server: true
        }
    }

    /// A stable short code for scripts and logs.
    public var code: String {
        switch self {
        case .invalidURL: "INVALID_URL"
        case .connectFailed: "CONNECT_FAILED"
        case .timeout: "TIMEOUT"
        case .closed: "CLOSED"
        case .runtimeUnavailable: "RUNTIME_UNAVAILABLE"
        case .server(let code, _): code
        case .transportUnsupported: "TRANSPORT_UNSUPPORTED"
        }
    }

    public var description: String {
        switch self {
        case .invalidURL(let url): "invalid WebSocket URL: \(url)"
        case .connectFailed(let why): "connection failed: \(why)"
        case .timeout(let what): "timed out waiting for \(what)"
        case .closed(let info): "connection closed (\(info))"
        case .runtimeUnavailable(let why): "client runtime unavailable: \(why)"
        case .server(let code, let message): "\(code): \(message)"
        case .transportUnsupported(let why): "transport unsupported: \(why)"
        }
    }
}
