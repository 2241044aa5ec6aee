import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// The client library's own behaviour against the real broker: callbacks, many connections
/// on one runtime, closes and drops, URL parsing.
@Suite("Client library")
struct ClientLibraryTests {
    @Test("callback style: 300 connections on one runtime log in and ping")
    func callbacksAtScale() throws {
        let broker = try BrokerProcess()
        let runtime = try ClientRuntime(options: .init(maxConnections: 400, rxBufferSize: 1024))
        defer { runtime.shutdown() }
        let done = Counter()
        var connections: [RollcallConnection] = []
        for index in 0..<300 {
            let connection = try RollcallConnection(url: broker.url(), runtime: runtime)
            connection.onOpen = { [unowned connection] in
                connection.send("login", ["userId": .string("u\(index)")]) { login in
                    guard login.ok else { return }
                    connection.send("ping") { pong in if pong.ok, pong["serverTime"] != nil { done.increment() } }
                }
            }
            connection.start()
            connections.append(connection)
        }
        #expect(eventually(timeout: 20) { done.value == 300 }, "\(done.value) of 300 sessions answered")
        #expect(try broker.metric("rollcall_connections_open") == 300)
        let closed = Counter()
        for connection in connections {
            connection.onClose = { info in if info.code == 1000 { closed.increment() } }
            connection.close(code: 1000, reason: "bye")
        }
        #expect(eventually(timeout: 10) { closed.value == 300 })
        #expect(eventually(timeout: 5) { (try? broker.metric("rollcall_connections_open")) == 0 })
    }

    @Test("epoll runtime: blocking requests, events and closes work the same on libev's loop")
    func epollRuntime() throws {
        let broker = try BrokerProcess()
        let runtime = try ClientRuntime(options: .init(maxConnections: 16, epoll: true))
        defer { runtime.shutdown() }
        let alice = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        let bob = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        try alice.call("login", ["userId": "alice"])
        try bob.call("login", ["userId": "bob"])
        try alice.call("join", ["channel": "room"])
        try bob.call("join", ["channel": "room"])
        let joined = try alice.waitForEvent(timeout: .seconds(5), where: { $0.type == "join" && $0["publisher"] == "bob" })
        #expect(joined["occupancy"] == 2)
        let rawMessages = Counter()
        bob.onRawEvent = { line in
            if String(decoding: line, as: UTF8.self).hasPrefix(#"{"event":"message""#) { rawMessages.increment() }
        }
        for index in 0..<20 { try alice.call("publish", ["channel": "room", "message": .int(index)]) }
        #expect(eventually(timeout: 5) { rawMessages.value == 20 }, "\(rawMessages.value) of 20 messages")
        try bob.call("logout")
        #expect(try bob.waitForClose(timeout: .seconds(5)).code == 1000)
    }

    /// Opt-in (it needs a high open-file limit): `ROLLCALL_CLIENT_SCALE=15000 swift test --filter scale`.
    @Test("scale: thousands of connections on one runtime",
          .enabled(if: ProcessInfo.processInfo.environment["ROLLCALL_CLIENT_SCALE"] != nil))
    func scale() throws {
        let count = Int(ProcessInfo.processInfo.environment["ROLLCALL_CLIENT_SCALE"] ?? "") ?? 5000
        let broker = try BrokerProcess(config: ["heartbeat": ["intervalSeconds": 60, "timeoutSeconds": 180]])
        let runtime = try ClientRuntime(options: .init(maxConnections: count + 100, rxBufferSize: 1024))
        defer { runtime.shutdown() }
        let loggedIn = Counter()
        let failed = Counter()
        let started = Date()
        var connections: [RollcallConnection] = []
        connections.reserveCapacity(count)
        for index in 0..<count {
            let connection = try RollcallConnection(url: broker.url(), runtime: runtime)
            connection.onOpen = { [unowned connection] in
                connection.send("login", ["userId": .string("u\(index)")]) { if $0.ok { loggedIn.increment() } }
            }
            connection.onClose = { info in
                if failed.value == 0 { print("scale: first close: \(info)") }
                failed.increment()
            }
            connection.start()
            connections.append(connection)
        }
        #expect(eventually(timeout: 150) { loggedIn.value == count || loggedIn.value + failed.value == count },
                "\(loggedIn.value) of \(count) logged in, \(failed.value) closed")
        #expect(failed.value == 0)
        print("scale: \(loggedIn.value) sessions in \(Date().timeIntervalSince(started)) s")
        #expect(try broker.metric("rollcall_connections_open") == count)
    }

    @Test("events and replies keep their order across batched frames")
    func transcriptOrder() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice", recordTranscript: true)
        let ids = (0..<10).map { _ in connection.send("ping") }
        for id in ids { _ = try connection.waitForReply(id: id, timeout: .seconds(5)) }
        let seen = connection.transcript.compactMap { $0["id"] }.suffix(10)
        #expect(Array(seen) == ids)
    }

    @Test("close(code:) is a client close frame: the broker sees a close, not a drop")
    func clientClose() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        connection.close(code: 1000, reason: "done")
        let info = try connection.waitForClose(timeout: .seconds(5))
        #expect(info.code == 1000)
        #expect(!info.closedByServer)
        #expect(!info.dropped)
        #expect(eventually { (try? broker.metric("rollcall_connection_ends_total{kind=\"close_frame\"}")) == 1 })
        #expect(try broker.metric("rollcall_sessions{state=\"held\"}") == 0, "a close frame ends the session")
        #expect(try broker.metric("rollcall_sessions{state=\"live\"}") == 0)
    }

    @Test("drop() ends the TCP stream without a close frame: the broker records a drop")
    func abruptDrop() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        connection.drop()
        let info = try connection.waitForClose(timeout: .seconds(5))
        #expect(info.dropped)
        #expect(info.code == nil)
        #expect(eventually { (try? broker.metric("rollcall_connection_ends_total{kind=\"dropped\"}")) == 1 })
        #expect(eventually { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 }, "an abnormal end holds the session")
    }

    @Test("requests after the close fail fast with .closed")
    func requestAfterClose() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        _ = try connection.request("logout")
        _ = try connection.waitForClose(timeout: .seconds(5))
        #expect(throws: ClientError.self) { _ = try connection.request("ping", timeout: .seconds(5)) }
    }

    @Test("connecting to a closed port fails with connectFailed")
    func connectRefused() throws {
        let broker = try BrokerProcess()
        let port = broker.port
        _ = broker.stop()
        #expect(throws: ClientError.self) {
            _ = try RollcallConnection.connect(url: "ws://127.0.0.1:\(port)/v1", timeout: .seconds(5))
        }
    }

    @Test("a runtime shut down: open connections end, new ones fail at once")
    func runtimeShutdown() throws {
        let broker = try BrokerProcess()
        let runtime = try ClientRuntime(options: .init(maxConnections: 16))
        let open = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        runtime.shutdown()
        #expect(try open.waitForClose(timeout: .seconds(2)).dropped)
        let started = Date()
        #expect(throws: ClientError.self) {
            _ = try RollcallConnection.connect(url: broker.url(), runtime: runtime, timeout: .seconds(5))
        }
        #expect(Date().timeIntervalSince(started) < 1)
    }

    @Test("WebSocket URLs parse host, port and path")
    func urls() throws {
        let plain = try WebSocketURL("ws://127.0.0.1:8080/v1")
        #expect(plain.host == "127.0.0.1" && plain.port == 8080 && plain.path == "/v1" && !plain.secure)
        let defaults = try WebSocketURL("wss://example.com")
        #expect(defaults.port == 443 && defaults.path == "/" && defaults.secure)
        let v6 = try WebSocketURL("ws://[::1]:9000/ws?x=1")
        #expect(v6.host == "::1" && v6.port == 9000 && v6.path == "/ws?x=1" && v6.hostHeader == "[::1]:9000")
        #expect(throws: ClientError.self) { _ = try WebSocketURL("http://example.com") }
        #expect(throws: ClientError.self) { _ = try WebSocketURL("ws://host:99999/") }
    }
}

/// A thread-safe counter for callbacks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
