import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// The connection cap (docs/security.md): below the open-file limit, new connections get a
/// clean HTTP 503 instead of the broker spinning on `accept` errors.
@Suite("Connection cap")
struct ConnectionCapTests {
    /// `ulimit -n 128` (soft and hard) for the broker only: cap = 128 − 64 = 64.
    static let lowLimit = ["/bin/sh", "-c", "ulimit -n 128 && exec \"$@\"", "sh"]

    @Test("at the cap a new upgrade gets 503; /healthz and existing sessions keep working; a freed slot is reused")
    func capRefusesWith503() throws {
        let broker = try BrokerProcess(wrapper: Self.lowLimit)
        let cap = try #require(try broker.metric("rollcall_connection_cap"))
        #expect(cap == 64, "cap for ulimit -n 128 is 128 - 64")
        // Only the /metrics request itself may be open before filling up.
        #expect(eventually { (try? broker.metric("rollcall_connection_descriptors")) == 1 })

        var sessions: [RollcallConnection] = []
        for index in 0..<cap {
            sessions.append(try broker.session("user\(index)"))
        }
        #expect(try sessions[0].request("join", ["channel": "lobby"]).ok)

        // One past the cap: a clean HTTP 503 with a reason, for raw upgrades and for the client.
        let refused = try RawHTTP.get(port: broker.port, path: "/v1", extraHeaders: Self.upgradeHeaders)
        #expect(refused.status == 503)
        #expect(refused.bodyText.contains("too many connections"))
        #expect(throws: ClientError.self) { _ = try broker.connect() }
        let file = try RawHTTP.get(port: broker.port, path: "/")
        #expect(file.status == 503, "static files are refused above the cap too")

        // The broker stays healthy: /healthz and /metrics answer, every session still works.
        let health = try RawHTTP.get(port: broker.port, path: "/healthz")
        #expect(health.status == 200)
        #expect(try (broker.metric("rollcall_connections_refused_total") ?? 0) >= 3)
        #expect(try broker.metric("rollcall_connections_open") == cap)
        for session in [sessions[0], sessions[cap / 2], sessions[cap - 1]] {
            #expect(try session.request("ping").ok)
        }
        #expect(try sessions[1].request("publish", ["channel": "lobby", "message": "still here"]).ok)
        #expect(try sessions[0].waitForEvent(timeout: .seconds(5)) { $0.name == "message" }["message"]?.stringValue == "still here")

        // Freeing one slot admits one new connection again.
        _ = try sessions.removeLast().request("logout")
        var late: RollcallConnection?
        #expect(eventually(timeout: 10) {
            late = try? broker.session("late")
            return late != nil
        }, "a connection is accepted once one slot is free")
        #expect(try late?.request("ping").ok == true)
        #expect(!broker.stderrText.contains("Too many open files"), "accept never ran out of descriptors")
        #expect(broker.isRunning)
    }

    @Test("when even the 503 band is full, new sockets are closed at accept and the broker recovers")
    func bandFullClosesAtAccept() throws {
        let broker = try BrokerProcess(config: ["heartbeat": ["intervalSeconds": 30, "timeoutSeconds": 60]], wrapper: Self.lowLimit)
        let cap = try #require(try broker.metric("rollcall_connection_cap"))
        var sessions: [RollcallConnection] = []
        for index in 0..<cap { sessions.append(try broker.session("user\(index)")) }
        // Idle TCP connections that never send a request fill the 503 band (32 descriptors);
        // the ones past it are closed by the broker as soon as they are accepted, without a byte
        // (long before lws' 5 s timeout for connections that send no request).
        var idle: [RawSocket] = []
        for _ in 0..<40 { idle.append(try RawSocket(port: broker.port)) }
        var closedAtAccept = Set<Int>()
        _ = eventually(timeout: 2) {
            for (index, socket) in idle.enumerated() where !closedAtAccept.contains(index) {
                if socket.receive(timeout: 0.01) == [] { closedAtAccept.insert(index) }
            }
            return closedAtAccept.count >= 8
        }
        #expect(closedAtAccept.count >= 1, "sockets past the band are closed at accept")
        #expect(closedAtAccept.count <= 10, "about 40 - 32 sockets are closed, not the whole band: \(closedAtAccept.count)")
        idle.forEach { $0.close() }
        // Once the idle sockets are gone, the broker serves again and never spun on accept.
        #expect(eventually(timeout: 10) { (try? RawHTTP.get(port: broker.port, path: "/healthz").status) == 200 })
        #expect(try (broker.metric("rollcall_connections_closed_at_accept_total") ?? 0) >= 1)
        #expect(try sessions[0].request("ping").ok)
        #expect(!broker.stderrText.contains("Too many open files"))
        #expect(broker.isRunning)
    }

    static let upgradeHeaders = [
        "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]
}
