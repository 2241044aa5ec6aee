#if canImport(FoundationNetworking) || canImport(Darwin)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `URLSessionWebSocketTask` transport: Apple platforms, and Linux where Foundation's
/// networking (libcurl) can make WebSocket connections. Every callback runs on one serial
/// delegate queue, so events come in order. A Linux whose libcurl has no WebSocket support
/// (Debian 12's 7.88) ends every link before it opens with ``ClientError/transportUnsupported(_:)``.
///
/// `URLSession` decides compression and certificate checks by itself:
/// ``TransportOptions/permessageDeflate`` and ``TransportOptions/allowSelfSignedCertificate``
/// are not used.
public final class URLSessionTransport: NSObject, WebSocketTransport, URLSessionWebSocketDelegate, @unchecked Sendable {
    private let url: URL
    private let options: TransportOptions
    private let queue: OperationQueue
    private let lock = NSLock()
    // Guarded by `lock`:
    private var lifecycle = SocketLifecycle()
    private var session: URLSession?
    private var task: URLSessionWebSocketTask?
    private var handler: (@Sendable (TransportEvent) -> Void)?
    /// Messages sent before the handshake finished, in order.
    private var queued: [[UInt8]] = []
    /// A close asked for before the handshake finished.
    private var closeAfterOpen: (code: UInt16, reason: String)?

    /// A transport to `url` (`ws://` or `wss://`); throws ``ClientError/invalidURL(_:)``.
    public init(url: String, options: TransportOptions) throws(ClientError) {
        _ = try WebSocketURL(url)
        guard let parsed = URL(string: url) else { throw .invalidURL(url) }
        self.url = parsed
        self.options = options
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "rollcall-urlsession-transport"
        super.init()
    }

    public func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) {
        let actions = lock.withLock { () -> [SocketLifecycle.Action] in
            self.handler = handler
            return lifecycle.start()
        }
        guard actions.contains(.beginHandshake) else { return }
        let session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: queue)
        var request = URLRequest(url: url)
        if let subprotocol = options.subprotocol { request.setValue(subprotocol, forHTTPHeaderField: "Sec-WebSocket-Protocol") }
        let task = session.webSocketTask(with: request)
        lock.withLock {
            self.session = session
            self.task = task
        }
        task.resume()
        receive(on: task)
    }

    public func send(text: [UInt8]) {
        let task = lock.withLock { () -> URLSessionWebSocketTask? in
            switch lifecycle.state {
            case .idle, .handshaking:
                queued.append(text)
                return nil
            case .open: return self.task
            default: return nil
            }
        }
        task?.send(.string(String(decoding: text, as: UTF8.self))) { _ in }
    }

    public func close(code: UInt16, reason: String) {
        let task = lock.withLock { () -> URLSessionWebSocketTask? in
            switch lifecycle.state {
            case .idle, .handshaking:
                closeAfterOpen = (code, reason)
                return nil
            case .open:
                lifecycle.closeFrameWritten(code: code, reason: reason)
                return self.task
            default:
                return nil
            }
        }
        let closeCode = URLSessionWebSocketTask.CloseCode(rawValue: Int(code)) ?? .normalClosure
        task?.cancel(with: closeCode, reason: Data(reason.utf8))
    }

    public func abort() {
        let task = lock.withLock { () -> URLSessionWebSocketTask? in
            lifecycle.dropWritten()
            return self.task
        }
        task?.cancel()
    }

    // MARK: Callbacks (on `queue`)

    private func receive(on task: URLSessionWebSocketTask) {
        task.receive { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(.string(let text)):
                self.emit(.message(Array(text.utf8)))
                self.receive(on: task)
            case .success(.data(let data)):
                self.emit(.message(Array(data)))
                self.receive(on: task)
            case .success:
                self.receive(on: task)
            case .failure(let error):
                // A close frame from the broker ends the receive loop; its code is on the task.
                if task.closeCode != .invalid {
                    let reason = task.closeReason.map { String(decoding: $0, as: UTF8.self) } ?? ""
                    self.lock.withLock {
                        if case .closing = self.lifecycle.state { return }
                        self.lifecycle.peerClosed(code: UInt16(exactly: task.closeCode.rawValue), reason: reason)
                    }
                }
                self.ended(error)
            }
        }
    }

    public func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?) {
        let (actions, pending, close) = lock.withLock { () -> ([SocketLifecycle.Action], [[UInt8]], (code: UInt16, reason: String)?) in
            let actions = lifecycle.established()
            defer { queued.removeAll(); closeAfterOpen = nil }
            return (actions, queued, closeAfterOpen)
        }
        guard actions.contains(.reportOpen) else { return }
        emit(.opened(extensions: ""))
        for text in pending { webSocketTask.send(.string(String(decoding: text, as: UTF8.self))) { _ in } }
        if let close { self.close(code: close.code, reason: close.reason) }
    }

    public func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask,
                           didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?) {
        let text = reason.map { String(decoding: $0, as: UTF8.self) } ?? ""
        lock.withLock {
            // Our own close frame's answer is ours; otherwise the broker closed.
            if case .closing = lifecycle.state { return }
            lifecycle.peerClosed(code: UInt16(exactly: closeCode.rawValue), reason: text)
        }
        finishSocket()
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        ended(error)
    }

    /// The socket is gone: a failure before the handshake, or its end.
    private func ended(_ error: (any Error)?) {
        let opened = lock.withLock { () -> Bool in
            switch lifecycle.state {
            case .idle, .handshaking: false
            default: true
            }
        }
        if opened || error == nil {
            finishSocket()
            return
        }
        let nsError = error.map { $0 as NSError }
        let reason = nsError?.localizedDescription ?? "connection failed"
        let unsupported = nsError?.domain == NSURLErrorDomain && nsError?.code == NSURLErrorUnsupportedURL
        let actions = lock.withLock { lifecycle.failed(reason) }
        for case .finish(let info, _) in actions {
            emitClose(info, failure: unsupported ? .transportUnsupported("\(reason) (\(url))") : .connectFailed(reason))
        }
    }

    private func finishSocket() {
        let actions = lock.withLock { lifecycle.socketClosed() }
        for case .finish(let info, let connectError) in actions {
            emitClose(info, failure: connectError.map(ClientError.connectFailed))
        }
    }

    private func emit(_ event: TransportEvent) {
        lock.withLock { handler }?(event)
    }

    private func emitClose(_ info: CloseInfo, failure: ClientError?) {
        let (handler, session) = lock.withLock { () -> ((@Sendable (TransportEvent) -> Void)?, URLSession?) in
            defer { self.handler = nil; self.session = nil; self.task = nil }
            return (self.handler, self.session)
        }
        handler?(.closed(info, failure: failure))
        // The session holds its delegate (this transport) until it is invalidated.
        session?.invalidateAndCancel()
    }
}

extension TransportFactory {
    /// `URLSessionWebSocketTask` (Apple platforms; Linux where libcurl supports WebSockets).
    public static var urlSession: TransportFactory {
        TransportFactory(name: "urlsession") { url, options throws(ClientError) in
            try URLSessionTransport(url: url, options: options)
        }
    }
}
#endif
