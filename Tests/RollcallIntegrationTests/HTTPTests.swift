import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §1: HTTP on the broker's port, paths, subprotocols and origins.
@Suite("HTTP and upgrades")
struct HTTPTests {
    @Test("/healthz answers 200 ok")
    func healthz() throws {
        let broker = try BrokerProcess()
        let response = try RawHTTP.get(port: broker.port, path: "/healthz")
        #expect(response.status == 200)
        #expect(response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
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
        for name in ["rollcall_connections", "rollcall_sessions", "rollcall_frames_in_total", "rollcall_frames_out_total",
                     "rollcall_bytes_in_total", "rollcall_bytes_out_total", "rollcall_errors_total"] {
            #expect(text.contains("# TYPE \(name) "), "missing \(name)")
        }
        #expect(try broker.metric("rollcall_errors_total{code=\"UNKNOWN_OP\"}") == 1)
        #expect(try (broker.metric("rollcall_connections") ?? 0) >= 1)
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
