import Foundation
import RollcallProtocol

/// One transport connection of a ``RollcallSession``, numbered: requests with integer ids and a
/// timeout each, replies matched by id, every message split on `\n` into objects handed on in
/// order. Transport-independent: the protocol's framing over any ``WebSocketTransport``.
final class SessionLink: @unchecked Sendable {
    /// What the link tells its session, on the transport's thread, in order.
    struct Handlers: Sendable {
        var opened: @Sendable (SessionLink) -> Void
        /// Called for every object received (before its event or reply is handled): liveness.
        var received: @Sendable (SessionLink) -> Void
        var event: @Sendable (SessionLink, Event) -> Void
        var closed: @Sendable (SessionLink, CloseInfo, ClientError?) -> Void
    }

    /// The link's number in its session (``SessionLifecycle`` ignores inputs of old links).
    let number: Int
    let transport: any WebSocketTransport

    private struct Pending {
        let op: String
        let completion: @Sendable (Result<Reply, ClientError>) -> Void
        let timer: DispatchWorkItem
    }

    private let lock = NSLock()
    private var nextID = 1
    private var pending: [Int: Pending] = [:]
    private var ended: CloseInfo?
    private var acceptedExtensions = ""

    init(number: Int, transport: any WebSocketTransport) {
        self.number = number
        self.transport = transport
    }

    /// The server's `Sec-WebSocket-Extensions` answer ("" before the link opened).
    var extensions: String { lock.withLock { acceptedExtensions } }

    /// True once the link has ended.
    var isEnded: Bool { lock.withLock { ended != nil } }

    /// Starts the transport.
    func start(_ handlers: Handlers) {
        transport.start { [self] event in
            switch event {
            case .opened(let extensions):
                lock.withLock { acceptedExtensions = extensions }
                handlers.opened(self)
            case .message(let bytes):
                if !isEnded { deliver(bytes, handlers) }
            case .closed(let info, let failure):
                let waiting = lock.withLock { () -> [Pending] in
                    if ended == nil { ended = info }
                    defer { pending.removeAll() }
                    return Array(pending.values)
                }
                for request in waiting {
                    request.timer.cancel()
                    request.completion(.failure(.closed(info)))
                }
                handlers.closed(self, info, failure)
            }
        }
    }

    /// Sends `op` with `arguments`; `completion` gets the reply, ``ClientError/timeout(_:)``
    /// when none comes within `timeout` seconds (a late one is dropped), or
    /// ``ClientError/closed(_:)`` when the link ends first. It runs on the transport's thread (or
    /// the timer's), in order with the events of the same link.
    func request(_ op: String, _ arguments: JSONObject, timeout: Double,
                 completion: @escaping @Sendable (Result<Reply, ClientError>) -> Void) {
        lock.lock()
        if let info = ended {
            lock.unlock()
            completion(.failure(.closed(info)))
            return
        }
        let id = nextID
        nextID += 1
        let timer = DispatchWorkItem { [weak self] in
            guard let self, let timedOut = self.lock.withLock({ self.pending.removeValue(forKey: id) }) else { return }
            timedOut.completion(.failure(.timeout("the reply to \(timedOut.op) (\(Int((timeout * 1000).rounded())) ms)")))
        }
        pending[id] = Pending(op: op, completion: completion, timer: timer)
        lock.unlock()
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: timer)
        transport.send(text: Self.encode(op, arguments, id: id))
    }

    /// Ends the link now, before its transport says so (liveness gave it up): requests in
    /// flight fail with `info`, and what still arrives is dropped.
    func end(_ info: CloseInfo) {
        let waiting = lock.withLock { () -> [Pending] in
            guard ended == nil else { return [] }
            ended = info
            defer { pending.removeAll() }
            return Array(pending.values)
        }
        for request in waiting {
            request.timer.cancel()
            request.completion(.failure(.closed(info)))
        }
    }

    /// Sends a close frame (1000) after what is queued.
    func close() { transport.close(code: 1000, reason: "") }

    /// Cuts the link without a close frame.
    func abort() { transport.abort() }

    private func deliver(_ message: [UInt8], _ handlers: Handlers) {
        var start = message.startIndex
        while start < message.endIndex {
            let end = message[start...].firstIndex(of: 0x0A) ?? message.endIndex
            if end > start, case .object(let object)? = try? JSONParser.parse(message[start..<end]) {
                handlers.received(self)
                if object["event"] != nil {
                    handlers.event(self, Event(object))
                } else {
                    let reply = Reply(object)
                    if let id = reply.id.numberValue?.intValue,
                       let request = lock.withLock({ pending.removeValue(forKey: id) }) {
                        request.timer.cancel()
                        request.completion(.success(reply))
                    }
                }
            }
            start = end + 1
        }
    }

    static func encode(_ op: String, _ arguments: JSONObject, id: Int) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("id"); writer.value(.int(id))
        writer.key("op"); writer.string(op)
        for member in arguments.members where member.key != "id" && member.key != "op" {
            writer.key(member.key); writer.value(member.value)
        }
        writer.endObject()
        return writer.bytes
    }
}
