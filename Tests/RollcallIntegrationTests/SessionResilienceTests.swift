import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// `RollcallSession` against the real broker where the network or the broker misbehave: rejoins
/// over the rate limit after a restart, several readers of one session, and the URLSession
/// transport (docs/client.md, "Swift: RollcallSession").
@Suite("Session resilience", .serialized, .timeLimit(.minutes(3)))
struct SessionResilienceTests {
    @Test("a broker restart (no resume) with more channels than the join rate allows: RATE_LIMITED joins retried after retryAfterMs, shown as retrying, every channel joined again; the session never ends")
    func rateLimitedRejoinsAreRetried() async throws {
        // Burst 3, 2 per second: the login and two joins pass at once, the other joins wait.
        let config: [String: Any] = ["limits": ["requestsPerSecond": 2, "requestBurst": 3]]
        var broker = try asyncBroker(config)
        let port = broker.port
        let session = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5))
        let states = StateLog(session)
        try await session.connect()
        try await session.login(userId: "alice")
        let channels = (0..<6).map { ChannelRef("room:\($0)") }
        // The app's own joins meet the limit too: retried the same way, each call returns joined.
        for channel in channels { try await session.join(channel, state: ["n": channel.channel]) }
        #expect(channels.allSatisfy { session.status(of: $0) == .joined })
        let statuses = ChannelStatusLog(session, channels: channels)

        broker.kill()
        broker = try asyncBroker(config, port: port)
        let rejoined = await eventuallyAsync(timeout: 30) {
            session.state == .online && session.lastLogin?.resumed == false && channels.allSatisfy { session.status(of: $0) == .joined }
        }
        #expect(rejoined, "\(session.channels)")
        let retried = {
            channels.filter { channel in
                statuses.statuses(channel).contains { if case .retrying(_, let error) = $0 { error.code == "RATE_LIMITED" } else { false } }
            }
        }
        // The log's readers are tasks: on a busy cooperative pool they may run after the session
        // rejoined, so the statuses are awaited rather than read once.
        let sawRetries = await eventuallyAsync(timeout: 20) { retried().count >= 2 }
        #expect(sawRetries, "joins over the burst were answered RATE_LIMITED and retried: \(channels.map { statuses.statuses($0) })")
        #expect(!states.states.contains(.closed), "\(states.states)")
        // The broker agrees: alice is in every channel again, with her state.
        let bob = try broker.session("bob")
        let where_ = try bob.call("getUserChannels", ["userId": "alice"])
        #expect(where_["totalChannel"]?.numberValue?.intValue == channels.count)
        let state = try bob.call("getState", ["channel": "room:5", "userId": "alice"])
        #expect(state["state"]?["n"] == "room:5")
        #expect(session.roster(of: channels[5])?.members["alice"] != nil, "the roster came back with the snapshot")
        session.close()
    }

    @Test("a first connect before the broker is up is retried with backoff; it returns once the broker listens, and the session works")
    func firstConnectWaitsForTheBroker() async throws {
        let port = try LoopbackPort.free()
        let session = RollcallSession(url: "ws://127.0.0.1:\(port)/v1", reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.3))
        defer { session.close() }
        let states = StateLog(session)
        let connecting = Task { () -> RollcallError? in
            do throws(RollcallError) { try await session.connect(); return nil } catch { return error }
        }
        let refused = await eventuallyAsync(timeout: 20) {
            states.states.contains { if case .reconnecting(let attempt) = $0 { attempt >= 2 } else { false } }
        }
        #expect(refused, "nothing listens yet: the connect is tried again: \(states.states)")
        let broker = try asyncBroker(port: port)
        #expect(await connecting.value == nil, "connect() returned once the broker listened")
        try await session.login(userId: "early")
        let lobby = ChannelRef("lobby")
        try await session.join(lobby)
        let bob = try broker.session("bob")
        let listing = try bob.call("getOnlineUsers", ["channel": "lobby"])
        #expect("\(listing)".contains("early"), "\(listing)")
    }

    @Test("several readers of one session each get every event, typed; roster updates carry the whole roster")
    func multicastAgainstTheBroker() async throws {
        let broker = try asyncBroker()
        let session = RollcallSession(url: broker.url())
        try await session.connect()
        try await session.login(userId: "watcher")
        let lobby = ChannelRef("lobby")
        try await session.join(lobby)
        let readers = [session.events, session.events]
        let updates = session.rosterUpdates(of: lobby)
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby", state: ["mood": "ok"]).ok)
        #expect(try bob.call("publish", ["channel": "lobby", "message": ["text": "hi"]])["recipients"] == 1)

        for reader in readers {
            var kinds: [String] = []
            for try await event in reader {
                switch event {
                case .presence(let presence): kinds.append("\(presence.type):\(presence.publisher ?? "")")
                case .message(let message): kinds.append("message:\(message.publisher):\(message.message["text"]?.stringValue ?? "")")
                default: continue
                }
                if kinds.count == 2 { break }
            }
            #expect(kinds == ["join:bob", "message:bob:hi"])
        }
        for await update in updates where update.cause == .event(.join) {
            #expect(update.changes == [.joined("bob")])
            #expect(update.roster.sortedMembers.map(\.userId) == ["bob", "watcher"])
            #expect(update.roster.members["bob"]?.state == ["mood": "ok"] && update.status == .joined)
            break
        }
        session.close()
    }

    @Test("the URLSession transport against the real broker: login, join, roster, resume — or, where libcurl cannot do WebSockets, TRANSPORT_UNSUPPORTED")
    func urlSessionTransport() async throws {
        let broker = try asyncBroker(["presence": ["timeoutSeconds": 30]])
        let session = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5),
                                      transport: .urlSession)
        #expect(session.transport.name == "urlsession")
        do {
            try await session.connect()
        } catch {
            // Foundation on Linux makes WebSockets through libcurl, which needs WebSocket support
            // built in (Debian 12's 7.88 has none: `curl -V` lists no ws protocol).
            #expect(error.code == "TRANSPORT_UNSUPPORTED", "\(error)")
            #expect(try !Self.curlSpeaksWebSockets(), "curl lists ws, yet the transport could not connect: \(error)")
            return
        }
        try await session.login(userId: "alice")
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        let lobby = ChannelRef("lobby")
        try await session.join(lobby)
        #expect(session.roster(of: lobby)?.sortedMembers.map(\.userId) == ["alice", "bob"])
        session.dropConnection()
        #expect(await eventuallyAsync { session.state == .online && session.lastLogin?.resumed == true })
        session.close()
    }

    /// Whether the system's curl (and so, as a rule, libcurl) lists the `ws` protocol.
    private static func curlSpeaksWebSockets() throws -> Bool {
        guard let curl = ExternalCommand.which("curl") else { return false }
        let version = try ExternalCommand.run(curl, ["-V"])
        let protocols = version.stdout.split(separator: "\n").first { $0.hasPrefix("Protocols:") } ?? ""
        return protocols.split(separator: " ").contains("ws")
    }
}
