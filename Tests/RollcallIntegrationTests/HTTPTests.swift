import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §1: HTTP on the broker's port, paths, subprotocols and origins.
@Suite("HTTP and upgrades")
struct HTTPTests {
    @Test("/livez, /readyz and /healthz (an alias of /readyz) answer 200 ok")
    func healthz() throws {
        let broker = try BrokerProcess()
        for path in ["/livez", "/readyz", "/healthz"] {
            let response = try RawHTTP.get(port: broker.port, path: path)
            #expect(response.status == 200, "\(path)")
            #expect(response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(path)")
        }
    }

    @Test("/metrics is Prometheus text with the expected metrics")
    func metrics() throws {
        let broker = try BrokerProcess()
        let session = try broker.session("alice")
        _ = try session.request("nope")
        let response = try RawHTTP.get(port: broker.port, path: "/metrics")
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true)
        let text = response.bodyText
        for name in ["rollcall_connections_open", "rollcall_sessions", "rollcall_frames_in_total", "rollcall_frames_out_total",
                     "rollcall_bytes_in_total", "rollcall_bytes_out_total", "rollcall_errors_total"] {
            #expect(text.contains("# TYPE \(name) "), "missing \(name)")
        }
        #expect(try broker.metric("rollcall_errors_total{code=\"UNKNOWN_OP\"}") == 1)
        #expect(try (broker.metric("rollcall_connections_open") ?? 0) >= 1)
    }

    @Test("/metrics has the histograms: frame size, queued bytes at write, fan-out size")
    func histograms() throws {
        let broker = try BrokerProcess()
        let alice = try broker.session("alice")
        #expect(try alice.request("join", ["channel": "lobby"]).ok)
        let text = try RawHTTP.get(port: broker.port, path: "/metrics").bodyText
        for name in ["rollcall_frame_out_bytes", "rollcall_outbound_queue_at_write_bytes", "rollcall_event_recipients"] {
            #expect(text.contains("# TYPE \(name) histogram"), "missing \(name)")
            #expect(text.contains("\(name)_bucket{le=\"+Inf\"} "), "no +Inf bucket for \(name)")
        }
        // The login and join replies went out in frames, each recorded.
        #expect(try (broker.metric("rollcall_frame_out_bytes_count") ?? 0) >= 2)
        #expect(try (broker.metric("rollcall_outbound_queue_at_write_bytes_count") ?? 0) >= 1)
        // The core's side: handling time per op, and fan-out sizes (bob's join went to alice).
        let bob = try broker.session("bob")
        #expect(try bob.request("join", ["channel": "lobby"]).ok)
        #expect(try broker.metric("rollcall_request_duration_seconds_count{op=\"login\"}") == 2)
        #expect(try broker.metric("rollcall_request_duration_seconds_count{op=\"join\"}") == 2)
        #expect(try (broker.metric("rollcall_event_recipients_count") ?? 0) >= 1)
        #expect(try (broker.metric("rollcall_event_recipients_sum") ?? 0) >= 1)
    }

    @Test("HEAD answers the headers of GET without the body")
    func head() throws {
        let broker = try BrokerProcess()
        for path in ["/healthz", "/"] {
            let socket = try RawSocket(port: broker.port)
            try socket.send("HEAD \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let (bytes, _) = socket.readToEnd(timeout: 5)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"), "HEAD \(path): \(text)")
            #expect(text.hasSuffix("\r\n\r\n"), "HEAD \(path) sent a body: \(text)")
        }
    }

    @Test("a method a path does not take is 405 with Allow; POST to an unknown path is 404")
    func methodNotAllowed() throws {
        let broker = try BrokerProcess()
        let post = try RawHTTP.send(port: broker.port, method: "POST", path: "/healthz", body: Array("x".utf8))
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
        let delete = try RawHTTP.send(port: broker.port, method: "DELETE", path: "/metrics")
        #expect(delete.status == 405)
        #expect(delete.headers["allow"] == "GET, HEAD")
        #expect(try RawHTTP.send(port: broker.port, method: "POST", path: "/nope", body: Array("x".utf8)).status == 404)
    }

    @Test("POST /api/v1: the body is read in chunks up to limits.maxFrameBytes, 413 past it, JSON answers")
    func serverAPIBody() throws {
        let broker = try BrokerProcess(config: ["limits": ["maxFrameBytes": 40000]])
        // Larger than lws' receive chunk: the body arrives in several LWS_CALLBACK_HTTP_BODY calls.
        let withinLimit = try RawHTTP.send(port: broker.port, method: "POST", path: "/api/v1/getInfo",
                                           body: Array(repeating: UInt8(ascii: " "), count: 40000))
        #expect(withinLimit.status == 401)  // the API answers 401 while no key is configured
        #expect(withinLimit.headers["content-type"] == "application/json")
        #expect(withinLimit.bodyText.contains("\"UNAUTHORIZED\""))
        let tooLarge = try RawHTTP.send(port: broker.port, method: "POST", path: "/api/v1/getInfo",
                                        body: Array(repeating: UInt8(ascii: " "), count: 40001))
        #expect(tooLarge.status == 413)
        #expect(tooLarge.bodyText.contains("\"MESSAGE_TOO_LARGE\""))
        let wrongMethod = try RawHTTP.send(port: broker.port, method: "GET", path: "/api/v1/getInfo")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "POST")
        #expect(wrongMethod.bodyText.contains("\"INVALID_REQUEST\""))
        #expect(try RawHTTP.get(port: broker.port, path: "/healthz").status == 200)
        #expect(try broker.metric("rollcall_http_responses_total{status=\"413\"}") == 1)
    }

    @Test("/metrics counts channels and subscriptions")
    func stateGauges() throws {
        let broker = try BrokerProcess()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try broker.metric("rollcall_channels") == 0)
        #expect(try alice.request("join", ["channel": "lobby"]).ok)
        #expect(try bob.request("join", ["channel": "lobby"]).ok)
        #expect(try bob.request("join", ["channel": "feed", "channelType": "stream"]).ok)
        #expect(try alice.request("subscribeUserStatus", ["userIds": ["bob", "carol"]]).ok)
        #expect(try broker.metric("rollcall_channels") == 2)
        #expect(try broker.metric("rollcall_subscriptions") == 2)
        #expect(try broker.metric("rollcall_interval_flushes_pending") == 0)
        #expect(try bob.request("leave", ["channel": "feed", "channelType": "stream"]).ok)
        #expect(try alice.request("unsubscribeUserStatus", ["userIds": ["carol"]]).ok)
        #expect(try broker.metric("rollcall_channels") == 1)
        #expect(try broker.metric("rollcall_subscriptions") == 1)
    }

    @Test("/ serves an HTML page")
    func indexPage() throws {
        let broker = try BrokerProcess()
        let response = try RawHTTP.get(port: broker.port, path: "/")
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(response.bodyText.lowercased().contains("<html"))
    }

    @Test("an unknown HTTP path is 404")
    func unknownHTTPPath() throws {
        let broker = try BrokerProcess()
        #expect(try RawHTTP.get(port: broker.port, path: "/no-such-page").status == 404)
    }

    @Test("subprotocol rollcall.v1 and no subprotocol are both accepted")
    func subprotocols() throws {
        let broker = try BrokerProcess()
        let withProtocol = try broker.connect(subprotocol: "rollcall.v1")
        let without = try broker.connect(subprotocol: nil)
        #expect(try withProtocol.login(userId: "a").ok)
        #expect(try without.login(userId: "b").ok)
    }

    @Test("/ws is an alias of /v1; an unknown path is refused")
    func paths() throws {
        let broker = try BrokerProcess()
        let alias = try broker.connect(path: "/ws")
        #expect(try alias.login(userId: "a").ok)
        #expect(throws: ClientError.self) { _ = try broker.connect(path: "/v2") }
        let refused = try RawHTTP.get(port: broker.port, path: "/v2", extraHeaders: upgradeHeaders)
        #expect(refused.status != 101)
    }

    @Test("allowedOrigins: a listed Origin or none is accepted, another gets 403")
    func origins() throws {
        let broker = try BrokerProcess(config: ["http": ["allowedOrigins": ["http://good.example"]]])
        let good = try broker.connect(origin: "http://good.example")
        #expect(try good.login(userId: "a").ok)
        let none = try broker.connect(origin: nil)
        #expect(try none.login(userId: "b").ok)
        #expect(throws: ClientError.self) { _ = try broker.connect(origin: "http://evil.example") }
        let refused = try RawHTTP.get(port: broker.port, path: "/v1", extraHeaders: upgradeHeaders + ["Origin: http://evil.example"])
        #expect(refused.status == 403)
        let accepted = try RawHTTP.get(port: broker.port, path: "/v1", extraHeaders: upgradeHeaders + ["Origin: http://good.example"], timeout: 2)
        #expect(accepted.status == 101)
    }

    let upgradeHeaders = [
        "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]
}

extension RawHTTP {
    /// Sends `method path` with `body` (and its Content-Length) and `Connection: close`, and
    /// reads the response.
    static func send(port: Int, method: String, path: String, body: [UInt8] = [], timeout: TimeInterval = 5) throws -> HTTPResponse {
        let socket = try RawSocket(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if !body.isEmpty { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        try socket.send(Array((head + "\r\n").utf8) + body)
        return try readResponse(socket, timeout: timeout)
    }
}
