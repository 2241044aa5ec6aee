/// What a ``WebSocketTransport`` reports to its owner, in order: ``opened(extensions:)`` once (or
/// nothing when it never opened), any number of ``message(_:)``, then ``closed(_:failure:)`` exactly once.
public enum TransportEvent: Sendable {
    /// The handshake succeeded; `extensions` is the server's `Sec-WebSocket-Extensions` answer.
    case opened(extensions: String)
    /// One whole text message (the broker may batch several JSON objects in it, one per line).
    case message([UInt8])
    /// The connection ended, or never opened (``CloseInfo/dropped`` with the reason); `failure`
    /// says why it never opened (``ClientError/connectFailed(_:)``,
    /// ``ClientError/transportUnsupported(_:)``), nil once it had opened.
    case closed(CloseInfo, failure: ClientError?)
}

/// The seam between the client and a WebSocket implementation: text messages out, whole
/// messages in. ``RollcallSession`` speaks the protocol over any transport; the library brings
/// two (``TransportFactory/libwebsockets(runtime:)`` on Linux, ``TransportFactory/urlSession``
/// where Foundation has `URLSessionWebSocketTask`), and tests may bring their own.
///
/// A transport delivers its events one at a time, in order (from a thread of its own), and
/// never after ``TransportEvent/closed(_:failure:)``. Every method may be called from any thread.
public protocol WebSocketTransport: AnyObject, Sendable {
    /// Starts the handshake; `handler` receives every event. Called once.
    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void)
    /// Sends one text message (queued until the socket is open; dropped once it is closed).
    func send(text: [UInt8])
    /// Sends a close frame after what is queued, then ends the connection.
    func close(code: UInt16, reason: String)
    /// Ends the connection at once without a close frame, as a network failure would (a link
    /// found dead by liveness, tests). ``TransportEvent/closed(_:failure:)`` still follows.
    func abort()
}

/// How a transport is opened.
public struct TransportOptions: Sendable, Equatable {
    /// Offered as `Sec-WebSocket-Protocol`; nil offers none.
    public var subprotocol: String?
    /// Offer `permessage-deflate` (libwebsockets only; URLSession decides by itself).
    public var permessageDeflate: Bool
    /// For `wss://`: accept a self-signed certificate (libwebsockets only; development and tests).
    public var allowSelfSignedCertificate: Bool

    /// Options; the defaults offer `rollcall.v1`, no compression, verified certificates.
    public init(subprotocol: String? = "rollcall.v1", permessageDeflate: Bool = false, allowSelfSignedCertificate: Bool = false) {
        self.subprotocol = subprotocol
        self.permessageDeflate = permessageDeflate
        self.allowSelfSignedCertificate = allowSelfSignedCertificate
    }
}

/// Makes a session's transports: which WebSocket implementation it uses.
public struct TransportFactory: Sendable {
    /// A short name for logs and tests (`libwebsockets`, `urlsession`, …).
    public let name: String
    private let make: @Sendable (String, TransportOptions) throws(ClientError) -> any WebSocketTransport

    /// A factory from a closure that makes one transport per connection attempt (the URL, the options).
    public init(name: String, make: @escaping @Sendable (String, TransportOptions) throws(ClientError) -> any WebSocketTransport) {
        self.name = name
        self.make = make
    }

    /// One new, unstarted transport to `url`.
    public func transport(url: String, options: TransportOptions) throws(ClientError) -> any WebSocketTransport {
        try make(url, options)
    }

    /// The platform's transport: libwebsockets on Linux (when built with the `LibWebSockets`
    /// trait, the default), else `URLSessionWebSocketTask`.
    public static var platformDefault: TransportFactory {
        #if LibWebSockets && os(Linux)
        return .libwebsockets()
        #elseif canImport(FoundationNetworking) || canImport(Darwin)
        return .urlSession
        #else
        return TransportFactory(name: "none") { url, _ throws(ClientError) in
            throw ClientError.transportUnsupported("no WebSocket transport on this platform for \(url)")
        }
        #endif
    }
}
