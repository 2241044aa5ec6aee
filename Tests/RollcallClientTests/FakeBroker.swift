import Foundation
import RollcallClient
import RollcallProtocol

/// A scripted broker behind the transport seam: every link the session opens is a `FakeLink`,
/// and `answer` decides what the broker sends back for each request (nothing: a frozen link).
/// The session under test runs unchanged; no socket is opened.
final class FakeBroker: @unchecked Sendable {
    private let lock = NSLock()
    private var madeLinks: [FakeLink] = []
    private var script: @Sendable (FakeLink, String, JSONObject) -> [JSON]

    /// A broker that answers with `script(link, op, arguments)`: the objects to send back, in order.
    init(_ script: @escaping @Sendable (FakeLink, String, JSONObject) -> [JSON]) {
        self.script = script
    }

    /// Replaces the script.
    func answer(with script: @escaping @Sendable (FakeLink, String, JSONObject) -> [JSON]) {
        lock.withLock { self.script = script }
    }

    /// How many of the next handshakes fail (a broker that is not up yet).
    private var handshakesToRefuse = 0

    /// The next `count` links the session opens fail in their handshake (`CONNECT_FAILED`).
    func refuseHandshakes(_ count: Int) {
        lock.withLock { handshakesToRefuse = count }
    }

    /// Whether the handshake of a link opening now fails (counts it).
    func takesHandshake() -> Bool {
        lock.withLock {
            guard handshakesToRefuse > 0 else { return true }
            handshakesToRefuse -= 1
            return false
        }
    }

    /// The links the session opened, oldest first.
    var links: [FakeLink] { lock.withLock { madeLinks } }

    /// The transports the session under test uses.
    var factory: TransportFactory {
        TransportFactory(name: "fake") { [self] url, _ in
            let link = FakeLink(broker: self, number: lock.withLock { madeLinks.count + 1 })
            lock.withLock { madeLinks.append(link) }
            return link
        }
    }

    func respond(_ link: FakeLink, _ op: String, _ arguments: JSONObject) -> [JSON] {
        let script = lock.withLock { self.script }
        return script(link, op, arguments)
    }

    /// A success reply.
    static func ok(_ arguments: JSONObject, _ result: JSON) -> JSON {
        ["id": arguments["id"] ?? .null, "ok": true, "result": result]
    }

    /// An error reply.
    static func error(_ arguments: JSONObject, _ code: String, retryAfterMs: Int? = nil) -> JSON {
        var error: JSONObject = ["code": .string(code), "message": "scripted"]
        if let retryAfterMs { error["retryAfterMs"] = .int(retryAfterMs) }
        return ["id": arguments["id"] ?? .null, "ok": false, "error": .object(error)]
    }

    /// A login result with short liveness limits.
    static func login(_ arguments: JSONObject, token: String, resumed: Bool, interval: Double = 10, timeout: Double = 30) -> JSON {
        ok(arguments, ["userId": arguments["userId"] ?? "u", "sessionId": "s1", "resumeToken": .string(token), "serverTime": 1,
                       "resumed": .bool(resumed), "limits": ["heartbeatIntervalSeconds": .number(JSONNumber(interval)),
                                                             "heartbeatTimeoutSeconds": .number(JSONNumber(timeout))]])
    }

    /// The snapshot the broker sends after a presence join: the joiner alone.
    static func snapshot(_ arguments: JSONObject, seq: Int = 1) -> JSON {
        ["event": "presence", "type": "snapshot", "channel": arguments["channel"] ?? "", "channelType": "message",
         "snapshot": [["userId": "me", "state": [:]]], "occupancy": 1, "mode": "announce", "seq": .int(seq)]
    }
}

/// One link of the `FakeBroker`: a `WebSocketTransport` whose events come from one serial queue.
final class FakeLink: WebSocketTransport, @unchecked Sendable {
    let number: Int
    private let broker: FakeBroker
    private let queue: DispatchQueue
    private let lock = NSLock()
    private var handler: (@Sendable (TransportEvent) -> Void)?
    private var ended = false
    private var sent: [(op: String, arguments: JSONObject)] = []

    init(broker: FakeBroker, number: Int) {
        self.broker = broker
        self.number = number
        queue = DispatchQueue(label: "fake-link-\(number)")
    }

    /// The requests the session sent on this link, in order.
    var requests: [(op: String, arguments: JSONObject)] { lock.withLock { sent } }

    /// The ops sent, in order.
    var ops: [String] { requests.map(\.op) }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) {
        lock.withLock { self.handler = handler }
        guard broker.takesHandshake() else {
            lock.withLock { ended = true }
            let info = CloseInfo(code: nil, reason: "connection refused", closedByServer: false, dropped: true)
            queue.async { handler(.closed(info, failure: .connectFailed("connection refused"))) }
            return
        }
        queue.async { handler(.opened(extensions: "")) }
    }

    func send(text: [UInt8]) {
        guard case .object(let request)? = try? JSONParser.parse(text), let op = request["op"]?.stringValue else { return }
        lock.withLock { sent.append((op, request)) }
        for object in broker.respond(self, op, request) { push(object) }
    }

    /// Sends one object to the session, as the broker would.
    func push(_ object: JSON) {
        let bytes = object.encoded()
        queue.async { [self] in
            guard let handler = lock.withLock({ ended ? nil : self.handler }) else { return }
            handler(.message(bytes))
        }
    }

    func close(code: UInt16, reason: String) { end(CloseInfo(code: code, reason: reason, closedByServer: false, dropped: false)) }

    func abort() { end(CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true)) }

    /// The network drops the link.
    func cut() { abort() }

    private func end(_ info: CloseInfo) {
        queue.async { [self] in
            let handler = lock.withLock { () -> (@Sendable (TransportEvent) -> Void)? in
                guard !ended else { return nil }
                ended = true
                return self.handler
            }
            handler?(.closed(info, failure: nil))
        }
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
func eventually(timeout: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
