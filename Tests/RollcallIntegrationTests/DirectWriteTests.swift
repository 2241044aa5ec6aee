import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// Writing a quiet connection at once, outside lws' writable callback (docs/transport.md,
/// "Writing"): what the socket does not take is kept by lws and sent from the writable
/// callback lws asks for itself, so a backlog far larger than the socket's buffers still
/// arrives whole and in order. The slow-consumer cut, close codes and TLS are covered by
/// LimitTests, ProtocolFaultTests and TLSTests, which run over the same path.
@Suite("Direct writes")
struct DirectWriteTests {
    @Test("a backlog 50 × the socket buffer, written directly then from writable callbacks, arrives complete and in order")
    func largeBacklogInOrder() throws {
        let broker = try BrokerProcess(config: ["limits": TransportLimitTests.fastRequests])
        let limits = TransportLimitTests()
        let (client, base) = try limits.loggedIn(broker)
        #expect(try #require(try broker.metric("rollcall_direct_writes_total")) >= 1,
                "the login reply of a new (quiet) connection was written directly")

        // 400 replies of 8 KiB (3.2 MiB, under the 4 MiB maxOutboundBytes) queued while the
        // client reads nothing: the kernel takes a few hundred KiB, lws keeps a frame's tail,
        // the broker's queue the rest.
        let count = 400
        let bystander = try broker.session("bystander")
        // Quiet for longer than the 4 ms coalescing window, so the first reply is written
        // directly rather than held for the flush.
        Thread.sleep(forTimeInterval: 0.01)
        let directBefore = try #require(try broker.metric("rollcall_direct_writes_total"))
        try client.send(limits.pings(count: count, replySize: 8192, base: base))
        #expect(eventually(timeout: 20) { (try? broker.metric("rollcall_requests_total")) ?? 0 >= 2 + 1 + count })
        #expect(try #require(try broker.metric("rollcall_direct_writes_total")) > directBefore,
                "the backlog's first reply was written directly")
        #expect(try bystander.request("ping").ok)
        #expect(try broker.metric("rollcall_slow_consumer_cuts_total") == 0)

        let frames = client.readFrames(objects: count, timeout: 30)
        let replies = frames.flatMap { $0.split(separator: "\n") }
        #expect(replies.count == count)
        let order = replies.compactMap { reply -> Int? in
            guard let range = reply.range(of: #""id":""#) else { return nil }
            return Int(reply[range.upperBound...].prefix(4))
        }
        #expect(order == Array(0..<count), "replies arrive in request order")
        #expect(replies.allSatisfy { $0.utf8.count == 8192 })
        #expect(client.closeCode == nil)
    }

    /// A broadcast to quiet members goes out in two passes (every frame first, then each
    /// queue and the counters): every member gets each event once and in order, the next
    /// broadcast finds the queues empty again, and the counters add up.
    /// Run with batched sends (io_uring, where this kernel allows it) and without.
    @Test("a broadcast to 40 quiet members, twice: each event arrives once, in order; the counters count every frame",
          arguments: [true, false])
    func broadcastToQuietMembers(batchedSends: Bool) throws {
        let broker = try BrokerProcess(config: ["limits": TransportLimitTests.fastRequests, "http": ["batchedSends": batchedSends]])
        let batching = try #require(try broker.metric("rollcall_batched_sends_enabled")) == 1
        if !batchedSends { #expect(!batching, "http.batchedSends false turns the batch off") }
        let members = try (0..<40).map { try broker.session("member-\($0)") }
        let setter = try broker.session("setter")
        for member in members {
            #expect(try member.join("hall").ok)
            _ = try member.presenceEvent("snapshot", channel: "hall")
        }
        #expect(try setter.join("hall").ok)
        for member in members { _ = try member.presenceEvent("join", channel: "hall", publisher: "setter") }
        // Quiet for longer than the 16 ms that makes a connection busy: both broadcasts are
        // written directly rather than held for the coalescing flush.
        Thread.sleep(forTimeInterval: 0.05)
        let before = try #require(try broker.metric("rollcall_direct_writes_total"))
        let objectsBefore = try #require(try broker.metric("rollcall_objects_out_total"))
        let batchedBefore = try #require(try broker.metric("rollcall_batched_sends_total"))
        for round in 1...2 {
            #expect(try setter.channelOp("setState", "hall", ["state": ["round": .string("\(round)")]]).ok)
            for member in members {
                let event = try member.presenceEvent("stateChanged", channel: "hall", publisher: "setter")
                #expect(event["state"] == ["round": .string("\(round)")])
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        for member in members { #expect(try member.request("ping").ok) }
        // 2 × 40 events and the 2 replies at least, each its own direct write and frame.
        #expect(try #require(try broker.metric("rollcall_direct_writes_total")) - before >= 82)
        #expect(try #require(try broker.metric("rollcall_objects_out_total")) - objectsBefore >= 82)
        let batched = try #require(try broker.metric("rollcall_batched_sends_total")) - batchedBefore
        if batching {
            #expect(batched >= 80, "each broadcast's 40 frames went out in the batch")
        } else {
            #expect(batched == 0)
        }
        for member in members {
            let stray = member.drainEvents().filter { $0.name == "presence" && $0.type == "stateChanged" }
            #expect(stray.isEmpty, "no event twice: \(stray)")
        }
    }

    /// A batched frame the socket takes only in part: the rest goes to lws (`LWS_WRITE_RAW`),
    /// which keeps it and sends it before anything else on that connection. A member that
    /// stops reading with a small receive buffer is sent 8 KiB events, each while it is quiet
    /// (so through the batch) until its socket is full; then it reads everything.
    @Test("batched sends to a member that stops reading: the frame cut short is finished by lws; every event arrives whole and in order")
    func batchedFrameCutShortIsFinished() throws {
        let broker = try BrokerProcess(config: ["limits": TransportLimitTests.fastRequests])
        let stalled = try FrameClient(port: broker.port, receiveBufferBytes: 4096)
        try stalled.send(["{\"id\":1,\"op\":\"login\",\"userId\":\"stalled\"}", "{\"id\":2,\"op\":\"join\",\"channel\":\"hall\"}"])
        #expect(stalled.readFrames(objects: 3).count >= 1) // login, join, snapshot
        let setter = try broker.session("setter")
        #expect(try setter.join("hall").ok)
        #expect(stalled.waitForText(containing: "\"join\"", timeout: 10))
        let batching = try #require(try broker.metric("rollcall_batched_sends_enabled")) == 1

        let value = String(repeating: "v", count: 8000)
        var sent = 0
        // Until a frame was cut short (or, without io_uring, lws kept a tail): at most 64 events,
        // 512 KiB, far under maxOutboundBytes.
        while sent < 64 {
            // Quiet for longer than the 16 ms that makes a connection busy: written directly.
            Thread.sleep(forTimeInterval: 0.03)
            #expect(try setter.channelOp("setState", "hall", ["state": ["n": .string("\(sent)\(value)")]]).ok)
            sent += 1
            if batching, try #require(try broker.metric("rollcall_batched_send_tails_total")) >= 1, sent >= 16 { break }
        }
        if batching {
            #expect(try #require(try broker.metric("rollcall_batched_send_tails_total")) >= 1, "a batched frame was cut short")
        }
        #expect(try broker.metric("rollcall_slow_consumer_cuts_total") == 0)

        let frames = stalled.readFrames(objects: sent, timeout: 30)
        let events = frames.flatMap { $0.split(separator: "\n") }.filter { $0.contains("\"stateChanged\"") }
        #expect(events.count == sent)
        let order = events.compactMap { event -> Int? in
            guard let range = event.range(of: #""n":""#) else { return nil }
            return Int(event[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(order == Array(0..<sent), "every event once, in order")
        #expect(events.allSatisfy { $0.hasSuffix("}") && $0.contains(value) }, "every event whole")
        #expect(stalled.closeCode == nil)
    }
}
