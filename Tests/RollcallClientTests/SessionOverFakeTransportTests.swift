import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `RollcallSession` itself, end to end over the transport seam with a scripted broker
/// (`FakeBroker`): liveness, rejoin errors, request timeouts and multicast events, without a
/// socket. The real broker runs the same session in the integration tests (`AsyncSessionTests`).
@Suite("Session over a fake transport", .serialized, .timeLimit(.minutes(2)))
struct SessionOverFakeTransportTests {
    /// A broker that answers every request: logins (a new session each time, short liveness
    /// limits), pings, presence joins (with their snapshot), everything else `{}`.
    /// `resumes`: a login with a resume token resumes (the broker still held the session).
    private static func answering(interval: Double = 10, timeout: Double = 30, resumes: Bool = false,
                                  frozen: @escaping @Sendable (FakeLink) -> Bool = { _ in false })
        -> @Sendable (FakeLink, String, JSONObject) -> [JSON] {
        { link, op, arguments in
            if frozen(link) { return [] }
            switch op {
            case "login":
                let resumed = resumes && arguments["resumeToken"] != nil
                return [FakeBroker.login(arguments, token: "t\(link.number)", resumed: resumed, interval: interval, timeout: timeout)]
            case "ping": return [FakeBroker.ok(arguments, ["serverTime": 1])]
            case "join": return [FakeBroker.ok(arguments, ["occupancy": 1, "mode": "announce"]), FakeBroker.snapshot(arguments)]
            default: return [FakeBroker.ok(arguments, [:])]
            }
        }
    }

    private func online(_ broker: FakeBroker, requestTimeout: Double = 10, eventBufferLimit: Int = 1024) async throws -> RollcallSession {
        let session = RollcallSession(url: "ws://fake/v1", reconnect: ReconnectPolicy(initialDelay: 0.02, maxDelay: 0.1),
                                      transport: broker.factory, requestTimeout: requestTimeout, eventBufferLimit: eventBufferLimit)
        try await session.connect()
        try await session.login(userId: "me")
        return session
    }

    @Test("liveness: pings after each quiet interval; a frozen link is given up after the timeout and the session resumes on a new one")
    func liveness() async throws {
        let frozen = Flag()
        // Only the first link freezes (a dead NAT); the broker still holds the session, so the
        // login on the next link resumes it. The timeout is 5 intervals: under a parallel
        // `swift test` on 2 cores a timer or a queue may run a few hundred milliseconds late.
        let broker = FakeBroker(Self.answering(interval: 0.3, timeout: 1.5, resumes: true, frozen: { $0.number == 1 && frozen.isSet }))
        let session = try await online(broker)
        defer { session.close() }
        #expect(await eventually(timeout: 20) { broker.links[0].ops.filter { $0 == "ping" }.count >= 3 }, "pings on a quiet link")
        #expect(broker.links.count == 1 && session.state == .online, "a healthy quiet link is kept")

        let frozenAt = Date()
        frozen.set()
        #expect(await eventually(timeout: 20) { broker.links.count == 2 }, "a new link after the timeout")
        let silentFor = Date().timeIntervalSince(frozenAt)
        #expect(silentFor >= 1.2, "not before about heartbeatTimeoutSeconds: \(silentFor) s")
        #expect(await eventually(timeout: 20) { session.state == .online && session.lastLogin?.resumed == true })
        let relogin = try #require(broker.links[1].requests.first)
        #expect(relogin.op == "login" && relogin.arguments["resumeToken"] == "t1", "the login carries the resume token")
    }

    @Test("a request with no reply throws code TIMEOUT after requestTimeout; the link stays up")
    func requestTimeout() async throws {
        let broker = FakeBroker(Self.answering())
        let session = try await online(broker, requestTimeout: 0.2)
        defer { session.close() }
        broker.answer { link, op, arguments in op == "getUserChannels" ? [] : Self.answering()(link, op, arguments) }
        let started = Date()
        do {
            _ = try await session.send(Requests.GetUserChannels(userId: "me"))
            Issue.record("no reply, yet it returned")
        } catch {
            #expect(error.code == "TIMEOUT")
        }
        let took = Date().timeIntervalSince(started)
        #expect(took >= 0.2 && took < 30, "not before requestTimeout, and no hang (\(took) s; a loaded machine delays timers)")
        #expect(session.state == .online && broker.links.count == 1)
    }

    @Test("after a login that did not resume: RATE_LIMITED rejoins are retried after retryAfterMs, a refused one is kept as failed; the session stays online")
    func rejoinErrors() async throws {
        let broker = FakeBroker(Self.answering())
        let session = try await online(broker)
        defer { session.close() }
        let (a, b, c) = (ChannelRef("a"), ChannelRef("b"), ChannelRef("c"))
        for channel in [a, b, c] { try await session.join(channel) }
        let bUpdates = session.rosterUpdates(of: b)
        let limitedOnce = Flag()
        broker.answer { link, op, arguments in
            guard op == "join" else { return Self.answering()(link, op, arguments) }
            switch arguments["channel"]?.stringValue {
            case "b" where !limitedOnce.isSet:
                limitedOnce.set()
                return [FakeBroker.error(arguments, "RATE_LIMITED", retryAfterMs: 150)]
            case "c": return [FakeBroker.error(arguments, "FORBIDDEN")]
            default: return Self.answering()(link, op, arguments)
            }
        }
        broker.links[0].cut()
        #expect(await eventually(timeout: 20) {
            session.status(of: b) == .joined && session.status(of: c) != .joined && session.status(of: a) == .joined && broker.links.count == 2
        })
        guard case .failed(let refusal)? = session.status(of: c) else { Issue.record("\(String(describing: session.status(of: c)))"); return }
        #expect(refusal.code == "FORBIDDEN")
        #expect(session.roster(of: c) != nil, "the roster is kept")
        #expect(session.state == .online)
        let bJoins = broker.links[1].requests.filter { $0.op == "join" && $0.arguments["channel"] == "b" }
        #expect(bJoins.count == 2, "sent again once after RATE_LIMITED")
        var statuses: [ChannelStatus] = []
        for await update in bUpdates {
            statuses.append(update.status)
            if update.status == .joined, statuses.count > 1 { break }
        }
        #expect(statuses.contains { if case .retrying(let after, let error) = $0 { after == 0.15 && error.code == "RATE_LIMITED" } else { false } },
                "\(statuses)")
    }

    @Test("events are typed and multicast; a reader that falls behind its buffer is ended with SLOW_READER, the others go on")
    func multicastEvents() async throws {
        let broker = FakeBroker(Self.answering())
        let session = try await online(broker, eventBufferLimit: 3)
        defer { session.close() }
        let fast = session.events(bufferLimit: 100)
        let slow = session.events
        for n in 1...10 {
            broker.links[0].push(["event": "message", "channel": "room", "publisher": "bob", "message": .int(n), "timestamp": 1])
        }
        var seen: [Int] = []
        for try await event in fast {
            guard case .message(let message) = event else { continue }
            seen.append(message.message.numberValue?.intValue ?? -1)
            if seen.count == 10 { break }
        }
        #expect(seen == Array(1...10))
        var slowSeen = 0
        do {
            for try await _ in slow { slowSeen += 1 }
            Issue.record("the slow reader was not ended")
        } catch {
            #expect((error as? RollcallError) == .slowReader(limit: 3))
        }
        #expect(slowSeen == 3, "it got what its buffer held")
    }

    @Test("the first connect is retried with backoff until the broker takes the handshake; the session is then usable")
    func firstConnectRetried() async throws {
        let broker = FakeBroker(Self.answering())
        broker.refuseHandshakes(2)
        let session = RollcallSession(url: "ws://fake/v1", reconnect: ReconnectPolicy(initialDelay: 0.02, maxDelay: 0.1),
                                      transport: broker.factory)
        defer { session.close() }
        let states = session.states
        try await session.connect()
        #expect(broker.links.count == 3, "two refused handshakes, then the third link")
        let login = try await session.login(userId: "me")
        #expect(login.resumeToken == "t3" && session.state == .online)
        var seen: [RollcallSession.ConnectionState] = []
        for try await state in states {
            seen.append(state)
            if state == .online { break }
        }
        #expect(seen == [.connecting, .reconnecting(attempt: 1), .reconnecting(attempt: 2), .online], "\(seen)")
    }

    @Test("a first connect that keeps failing waits until the calling task is cancelled, then throws CLOSED; connect() works again after")
    func firstConnectCancelled() async throws {
        let broker = FakeBroker(Self.answering())
        broker.refuseHandshakes(Int.max)
        let session = RollcallSession(url: "ws://fake/v1", reconnect: ReconnectPolicy(initialDelay: 0.01, maxDelay: 0.02),
                                      transport: broker.factory)
        defer { session.close() }
        let connecting = Task { () -> RollcallError? in
            do throws(RollcallError) { try await session.connect(); return nil } catch { return error }
        }
        #expect(await eventually(timeout: 10) { broker.links.count >= 4 }, "keeps dialling")
        connecting.cancel()
        let error = await connecting.value
        #expect(error?.code == "CLOSED" && "\(error!)".contains("cancelled"), "\(String(describing: error))")
        let dialled = broker.links.count
        broker.refuseHandshakes(0)
        try await session.connect()
        #expect(broker.links.count == dialled + 1, "no dial was left pending after the cancel")
        #expect(try await session.login(userId: "me").resumeToken.hasPrefix("t"))
    }

    @Test("a first connect with reconnecting off fails at once with CONNECT_FAILED")
    func firstConnectWithoutReconnect() async throws {
        let broker = FakeBroker(Self.answering())
        broker.refuseHandshakes(1)
        let session = RollcallSession(url: "ws://fake/v1", reconnect: ReconnectPolicy(enabled: false), transport: broker.factory)
        defer { session.close() }
        do {
            try await session.connect()
            Issue.record("connect() returned")
        } catch {
            #expect(error.code == "CONNECT_FAILED", "\(error)")
        }
        #expect(broker.links.count == 1)
    }
}

/// A thread-safe flag.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
