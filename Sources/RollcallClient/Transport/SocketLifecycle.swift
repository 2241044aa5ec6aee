/// The life of one client WebSocket as a value: where it is between the handshake and the end,
/// and how it ended. Each input (a transport callback, a frame written) moves it and returns the
/// ``Action``s the transport carries out; it does no I/O, so it is tested without sockets. Both
/// transports use it (``RollcallConnection`` on libwebsockets, ``URLSessionTransport``), so they
/// report the same ``CloseInfo`` for the same end.
///
/// - `idle` → `handshaking`: ``start()``.
/// - `handshaking` → `open`: ``established()``; → `closed`: ``failed(_:)``, ``destroyed()``.
/// - `open` → `closing`: our close frame was written (``closeFrameWritten(code:reason:)``).
/// - `open` → `dropping`: we cut the socket without a close frame (``dropWritten()``).
/// - `open`/`closing` → `peerClosed`: the broker's close frame (``peerClosed(code:reason:)``).
/// - any → `closed`: the socket is gone (``socketClosed()``, ``destroyed()``); ``Action/finish(_:connectError:)``
///   is returned exactly once.
public struct SocketLifecycle: Sendable, Equatable {
    /// Where the socket is.
    public enum State: Sendable, Equatable {
        /// Created, not started.
        case idle
        /// The WebSocket handshake is under way.
        case handshaking
        /// Open: messages flow both ways.
        case open
        /// Our close frame went out; waiting for the broker's answer or the socket's end.
        case closing(code: UInt16, reason: String)
        /// The broker sent a close frame (answered by the transport); the socket ends next.
        case peerClosed(code: UInt16?, reason: String)
        /// We cut the socket without a close frame (a drop).
        case dropping
        /// Ended; how is ``CloseInfo``.
        case closed(CloseInfo)
    }

    /// What the transport does after an input.
    public enum Action: Sendable, Equatable {
        /// Begin the handshake (connect the socket).
        case beginHandshake
        /// The handshake ended (succeeded or failed): free its slot among concurrent handshakes.
        case endHandshake
        /// Tell the owner the socket is open.
        case reportOpen
        /// Tell the owner how the socket ended (once), with the connect error when it never opened.
        case finish(CloseInfo, connectError: String?)
    }

    /// Where the socket is now.
    public private(set) var state: State = .idle

    /// A socket that has not started.
    public init() {}

    /// True once the socket has ended.
    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// True while the handshake runs.
    public var isHandshaking: Bool { state == .handshaking }

    /// How the socket ended, once it has.
    public var closeInfo: CloseInfo? {
        if case .closed(let info) = state { return info }
        return nil
    }

    /// Starts the handshake (once; later calls do nothing).
    public mutating func start() -> [Action] {
        guard state == .idle else { return [] }
        state = .handshaking
        return [.beginHandshake]
    }

    /// The handshake succeeded.
    public mutating func established() -> [Action] {
        guard state == .handshaking else { return [] }
        state = .open
        return [.endHandshake, .reportOpen]
    }

    /// The socket could not be opened (refused, bad handshake, the transport cannot do WebSockets).
    public mutating func failed(_ reason: String) -> [Action] {
        switch state {
        case .idle, .handshaking:
            let wasHandshaking = state == .handshaking
            return end(CloseInfo(code: nil, reason: reason, closedByServer: false, dropped: true), connectError: reason,
                       endHandshake: wasHandshaking)
        case .open, .closing, .peerClosed, .dropping:
            return end(CloseInfo(code: nil, reason: reason, closedByServer: false, dropped: true), connectError: nil, endHandshake: false)
        case .closed:
            return []
        }
    }

    /// Our close frame was written.
    public mutating func closeFrameWritten(code: UInt16, reason: String) {
        if state == .open { state = .closing(code: code, reason: reason) }
    }

    /// We cut the socket without a close frame.
    public mutating func dropWritten() {
        switch state {
        case .open, .closing: state = .dropping
        default: break
        }
    }

    /// The broker's close frame arrived (`code` nil when it carried none).
    public mutating func peerClosed(code: UInt16?, reason: String) {
        switch state {
        case .open, .closing: state = .peerClosed(code: code, reason: reason)
        default: break
        }
    }

    /// The socket is gone: the end is the broker's close, ours, or a drop, in that order.
    public mutating func socketClosed() -> [Action] {
        switch state {
        case .peerClosed(let code, let reason):
            return end(CloseInfo(code: code, reason: reason, closedByServer: true, dropped: false), connectError: nil, endHandshake: false)
        case .closing(let code, let reason):
            return end(CloseInfo(code: code, reason: reason, closedByServer: false, dropped: false), connectError: nil, endHandshake: false)
        case .handshaking:
            return end(Self.dropped(""), connectError: "connection failed", endHandshake: true)
        case .idle, .open, .dropping:
            return end(Self.dropped(""), connectError: nil, endHandshake: false)
        case .closed:
            return []
        }
    }

    /// The transport freed the socket (its last callback): ends it if nothing else did.
    public mutating func destroyed(reason: String = "") -> [Action] {
        switch state {
        case .closed: return []
        case .handshaking: return end(Self.dropped(reason), connectError: "connection failed", endHandshake: true)
        case .peerClosed, .closing: return socketClosed()
        case .idle, .open, .dropping: return end(Self.dropped(reason), connectError: nil, endHandshake: false)
        }
    }

    private static func dropped(_ reason: String) -> CloseInfo {
        CloseInfo(code: nil, reason: reason, closedByServer: false, dropped: true)
    }

    private mutating func end(_ info: CloseInfo, connectError: String?, endHandshake: Bool) -> [Action] {
        state = .closed(info)
        return (endHandshake ? [.endHandshake] : []) + [.finish(info, connectError: connectError)]
    }
}
