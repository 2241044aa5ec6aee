import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `http.permessageDeflate` (RFC 7692 through libwebsockets): off by default, so an offer is
/// ignored; on, the broker accepts the offer (what browsers send) and a client that did not
/// offer it still talks plain frames.
@Suite("WebSocket compression (permessage-deflate)")
struct CompressionTests {
    /// The upgrade response to a handshake that offers permessage-deflate as browsers do.
    func upgradeOfferingDeflate(_ broker: BrokerProcess) throws -> HTTPResponse {
        let socket = try RawSocket(port: broker.port)
        try socket.send(
            "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:\(broker.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
        return try RawHTTP.readResponse(socket, timeout: 5)
    }

    @Test("off by default: the offer is not accepted")
    func offByDefault() throws {
        let broker = try BrokerProcess()
        let response = try upgradeOfferingDeflate(broker)
        #expect(response.status == 101)
        #expect(response.headers["sec-websocket-extensions"] == nil)
    }

    @Test("on: the offer is accepted; a client that offers nothing is served uncompressed")
    func onAndUsed() throws {
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": true]])
        let response = try upgradeOfferingDeflate(broker)
        #expect(response.status == 101)
        #expect(response.headers["sec-websocket-extensions"]?.contains("permessage-deflate") == true)

        let client = try FrameClient(port: broker.port)
        try client.send(["{\"id\":0,\"op\":\"login\",\"userId\":\"alice\"}"])
        #expect(client.readFrames(objects: 1).first?.contains("\"ok\":true") == true)
    }
}

/// The Swift client's `permessageDeflate` option against the real broker.
@Suite("Swift client compression (permessage-deflate)")
struct ClientCompressionTests {
    /// A member's state: ~600 bytes of repetitive text, so the snapshot is large and compressible.
    static func state(_ index: Int) -> JSON {
        ["note": .string(String(repeating: "member \(index) is here; ", count: 24)), "index": .string("\(index)")]
    }

    @Test("on: 40 connections of one runtime negotiate it; a 40-member snapshot and a 20 KB message arrive intact",
          arguments: [8, 1])
    func manyConnectionsOneRuntime(memLevel: Int) throws {
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": true, "permessageDeflateMemLevel": memLevel]])
        let runtime = try ClientRuntime(options: .init(maxConnections: 64, rxBufferSize: 4096))
        defer { runtime.shutdown() }
        var members: [RollcallConnection] = []
        for index in 0..<40 {
            let member = try RollcallConnection.connect(url: broker.url(), runtime: runtime, permessageDeflate: true)
            #expect(member.isCompressed, "connection \(index): \(member.negotiatedExtensions)")
            try member.call("login", ["userId": .string("m\(index)")])
            try member.call("join", ["channel": "big", "state": Self.state(index)])
            members.append(member)
        }
        let watcher = try RollcallConnection.connect(url: broker.url(), runtime: runtime, permessageDeflate: true)
        #expect(watcher.negotiatedExtensions.hasPrefix("permessage-deflate"))
        try watcher.call("login", ["userId": "watcher"])
        try watcher.call("join", ["channel": "big", "presence": true])
        let snapshot = try watcher.waitForEvent(timeout: .seconds(5), where: { $0.type == "snapshot" })
        let entries = snapshot["snapshot"]?.arrayValue ?? []
        #expect(entries.count == 41) // the members and the watcher
        for entry in entries where entry["userId"] != "watcher" {
            guard let userId = entry["userId"]?.stringValue, let index = Int(userId.dropFirst()) else {
                Issue.record("bad entry \(entry)"); continue
            }
            #expect(entry["state"]?["note"] == Self.state(index)["note"] && entry["state"]?["index"] == .string("\(index)"))
        }

        // A large message from a compressing client to compressing receivers, byte for byte.
        let text = (0..<1000).map { "line \($0) of the big message" }.joined(separator: "|")
        try members[0].call("publish", ["channel": "big", "message": .string(text)])
        for member in members.dropFirst().prefix(5) + [watcher] {
            let message = try member.waitForEvent(timeout: .seconds(5), where: { $0.name == "message" })
            #expect(message["message"]?.stringValue == text)
        }
        // The broker saw them all as compressing connections: nothing was refused or dropped.
        #expect(members.allSatisfy(\.isOpen) && watcher.isOpen)
    }

    @Test("RollcallSession(options: TransportOptions(permessageDeflate: true)): compressed, and its roster is built from a compressed snapshot")
    func asyncSession() async throws {
        // A generous login timeout, as in AsyncSessionTests: under a parallel `swift test`, blocking
        // tests may hold the cooperative threads the suspended login waits for.
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": true], "limits": ["loginTimeoutSeconds": 120]])
        var members: [RollcallConnection] = []
        for index in 0..<20 {
            let member = try broker.session("m\(index)")
            try member.call("join", ["channel": "big", "state": Self.state(index)])
            members.append(member)
        }
        let session = RollcallSession(url: broker.url(), options: TransportOptions(permessageDeflate: true))
        try await session.connect()
        #expect(session.isCompressed)
        _ = try await session.login(userId: "watcher")
        let joined = try await session.join(ChannelRef("big"), messages: false)
        #expect(joined.occupancy == 21)
        let roster = try #require(session.roster(of: ChannelRef("big")))
        #expect(roster.members.count == 21)
        #expect(roster.members["m7"]?.state["note"] == Self.state(7)["note"]?.stringValue)
        session.close()
        let plain = RollcallSession(url: broker.url())
        try await plain.connect()
        #expect(!plain.isCompressed)
        plain.close()
    }

    @Test("off: a client that offers it connects uncompressed and works")
    func brokerOff() throws {
        let broker = try BrokerProcess()
        let runtime = try ClientRuntime(options: .init(maxConnections: 8))
        defer { runtime.shutdown() }
        let alice = try RollcallConnection.connect(url: broker.url(), runtime: runtime, permessageDeflate: true)
        let bob = try RollcallConnection.connect(url: broker.url(), runtime: runtime, permessageDeflate: true)
        #expect(!alice.isCompressed && !bob.isCompressed)
        #expect(alice.negotiatedExtensions == "")
        try alice.call("login", ["userId": "alice"])
        try bob.call("login", ["userId": "bob"])
        try alice.call("join", ["channel": "room"])
        try bob.call("join", ["channel": "room"])
        let text = String(repeating: "uncompressed ", count: 1000)
        try alice.call("publish", ["channel": "room", "message": .string(text)])
        #expect(try bob.waitForEvent(timeout: .seconds(5), where: { $0.name == "message" })["message"]?.stringValue == text)
    }

    @Test("not asked: a connection without the option does not offer it to a broker that has it on")
    func notOffered() throws {
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": true]])
        let runtime = try ClientRuntime(options: .init(maxConnections: 8))
        defer { runtime.shutdown() }
        let plain = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        let compressed = try RollcallConnection.connect(url: broker.url(), runtime: runtime, permessageDeflate: true)
        #expect(!plain.isCompressed && compressed.isCompressed)
        try plain.call("login", ["userId": "plain"])
        try compressed.call("login", ["userId": "compressed"])
    }
}
