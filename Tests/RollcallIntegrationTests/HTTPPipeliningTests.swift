import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// HTTP/1.1 pipelining on the broker's port (docs/transport.md, "Pipelined requests"): several
/// requests sent in one write, before any answer. Each answer the broker gives comes in order;
/// a request with a body that lws would have to read from its own buffer is not answered and
/// the connection closes cleanly after the answers before it. The service thread never spins:
/// a WebSocket session on the same broker keeps being served throughout.
@Suite("HTTP pipelining")
struct HTTPPipeliningTests {
    /// One request's bytes; `body` gets a Content-Length.
    static func request(_ method: String, _ path: String, body: [UInt8]? = nil, key: String? = ServerAPIRequest.key,
                        contentLength: Int? = nil) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        if let body {
            head += "Content-Type: application/json\r\nContent-Length: \(contentLength ?? body.count)\r\n"
        }
        return Array((head + "\r\n").utf8) + (body ?? [])
    }

    static let getInfo = request("POST", "/api/v1/getInfo", body: Array("{}".utf8))

    /// Sends `requests` in one write and reads the answers: `expected` statuses in order, each
    /// present, except that after the first `required` the broker may instead close the
    /// connection cleanly (no partial answer). Meanwhile `session` must keep answering.
    static func expectPipelined(
        _ broker: BrokerProcess, _ requests: [[UInt8]], statuses expected: [Int], required: Int,
        session: RollcallConnection, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let socket = try RawSocket(port: broker.port)
        try socket.send(requests.flatMap { $0 })
        let (responses, closed, trailing) = RawHTTP.readResponses(socket, count: expected.count, timeout: 5)
        let statuses = responses.map(\.status)
        #expect(statuses == Array(expected.prefix(statuses.count)), "answers out of order: \(statuses)", sourceLocation: sourceLocation)
        #expect(statuses.count >= required, "only \(statuses.count) answers", sourceLocation: sourceLocation)
        if statuses.count < expected.count {
            let detail = "neither every answer nor a clean close: \(statuses), \(trailing.count) trailing bytes, closed \(closed)"
            #expect(closed && trailing.isEmpty, "\(detail)", sourceLocation: sourceLocation)
        }
        // The service thread is free: the WebSocket session and a new HTTP client are served.
        #expect(try session.request("ping", timeout: .seconds(3)).ok, sourceLocation: sourceLocation)
        #expect(try RawHTTP.get(port: broker.port, path: "/healthz", timeout: 3).status == 200, sourceLocation: sourceLocation)
    }

    @Test("two server API POSTs in one write: answered in order, or the first then a clean close; others are served meanwhile")
    func twoPosts() throws {
        let broker = try BrokerProcess(config: ServerAPIRequest.config)
        let bob = try broker.session("bob")
        #expect(try bob.request("join", ["channel": "room"]).ok)
        try Self.expectPipelined(broker, [Self.getInfo, Self.getInfo], statuses: [200, 200], required: 1, session: bob)
        try Self.expectPipelined(broker, [Self.getInfo, Self.getInfo, Self.getInfo], statuses: [200, 200, 200], required: 1, session: bob)
        // A publish pipelined behind another reaches bob at most once, and only when answered.
        let publishArgs: JSON = ["channel": "room", "message": "m"]
        let publish = Self.request("POST", "/api/v1/publish", body: publishArgs.encoded())
        try Self.expectPipelined(broker, [Self.getInfo, publish], statuses: [200, 200], required: 1, session: bob)
    }

    @Test("pipelined 401s (a wrong key): answered in order or closed cleanly")
    func unauthorized() throws {
        let broker = try BrokerProcess(config: ServerAPIRequest.config)
        let bob = try broker.session("bob")
        let wrong = Self.request("POST", "/api/v1/getInfo", body: Array("{}".utf8), key: "not-the-key-0123456789")
        try Self.expectPipelined(broker, [wrong, wrong], statuses: [401, 401], required: 1, session: bob)
        // The API off: every request is 401.
        let off = try BrokerProcess()
        let carol = try off.session("carol")
        try Self.expectPipelined(off, [Self.getInfo, Self.getInfo], statuses: [401, 401], required: 1, session: carol)
    }

    @Test("a GET pipelined after a POST is answered after it")
    func getAfterPost() throws {
        let broker = try BrokerProcess(config: ServerAPIRequest.config)
        let bob = try broker.session("bob")
        let healthz = Self.request("GET", "/healthz", key: nil)
        try Self.expectPipelined(broker, [Self.getInfo, healthz], statuses: [200, 200], required: 2, session: bob)
        try Self.expectPipelined(broker, [healthz, healthz, Self.getInfo], statuses: [200, 200, 200], required: 2, session: bob)
    }

    @Test("bytes after a 405, a 404 or a 413: the refusal, then nothing but a clean close or the next answer")
    func bytesAfterRefusals() throws {
        let broker = try BrokerProcess(config: BrokerProcess.merge(ServerAPIRequest.config, ["limits": ["maxFrameBytes": 1000]]))
        let bob = try broker.session("bob")
        let getOnAPI = Self.request("GET", "/api/v1/getInfo")
        try Self.expectPipelined(broker, [getOnAPI, Self.getInfo], statuses: [405, 200], required: 1, session: bob)
        let postOnHealthz = Self.request("POST", "/healthz", body: Array("{}".utf8), key: nil)
        try Self.expectPipelined(broker, [postOnHealthz, Self.getInfo], statuses: [405, 200], required: 1, session: bob)
        let postElsewhere = Self.request("POST", "/nowhere", body: Array("{}".utf8), key: nil)
        try Self.expectPipelined(broker, [postElsewhere, Self.getInfo], statuses: [404, 200], required: 1, session: bob)
        // Declared over the limit: refused at the head, the body read and dropped.
        let tooLarge = Self.request("POST", "/api/v1/getInfo", body: Array(repeating: UInt8(ascii: " "), count: 1001))
        try Self.expectPipelined(broker, [tooLarge, Self.getInfo], statuses: [413, 200], required: 1, session: bob)
        // Declared within the limit but followed by a pipelined request in the same write.
        let options = Self.request("OPTIONS", "/api/v1/getInfo", body: Array("{}".utf8))
        try Self.expectPipelined(broker, [options, Self.getInfo], statuses: [405, 200], required: 1, session: bob)
    }

    @Test("keep-alive without pipelining: POSTs and GETs one after the other on one connection are all answered")
    func sequentialKeepAlive() throws {
        let broker = try BrokerProcess(config: ServerAPIRequest.config)
        let socket = try RawSocket(port: broker.port)
        var leftover: [UInt8] = []
        for round in 0..<3 {
            for request in [Self.getInfo, Self.request("GET", "/healthz", key: nil), Self.getInfo] {
                try socket.send(request)
                let response = try RawHTTP.readResponse(socket, timeout: 5, leftover: &leftover)
                #expect(response.status == 200, "round \(round): \(response.status) \(response.bodyText)")
            }
        }
    }
}
