import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `limits.maxBatchBytes` and `limits.maxOutboundBytes` at the limit and one past it
/// (`limits.maxFrameBytes` is in ProtocolFaultTests, the 1013 cut past maxOutboundBytes in
/// LimitTests). Replies to `ping` echo the request id, so a string id sets a reply's size.
@Suite("Transport limits at the edge")
struct TransportLimitTests {
    /// A logged-in FrameClient and the size of a ping reply whose string id is empty.
    func loggedIn(_ broker: BrokerProcess) throws -> (FrameClient, base: Int) {
        let client = try FrameClient(port: broker.port)
        try client.send(["{\"id\":0,\"op\":\"login\",\"userId\":\"batcher\"}"])
        #expect(client.readFrames(objects: 1).count == 1)
        try client.send(["{\"id\":\"\",\"op\":\"ping\"}"])
        let probe = try #require(client.readFrames(objects: 1).first)
        #expect(probe.contains("serverTime"))
        return (client, probe.utf8.count)
    }

    /// `count` ping requests whose replies are each exactly `size` bytes (distinct ids).
    func pings(count: Int, replySize size: Int, base: Int) -> [String] {
        (0..<count).map { index in
            let tag = String(format: "%04d", index)
            let id = tag + String(repeating: "p", count: size - base - tag.count)
            return "{\"id\":\"\(id)\",\"op\":\"ping\"}"
        }
    }

    static let fastRequests: [String: Any] = ["requestsPerSecond": 100_000, "requestBurst": 100_000]

    @Test("maxBatchBytes: two replies that fill it exactly share a frame; one byte more and every frame holds one")
    func batchAtAndPastTheLimit() throws {
        let limit = 1025
        let broker = try BrokerProcess(config: ["limits": Self.fastRequests.merging(["maxBatchBytes": limit]) { $1 }])
        let (client, base) = try loggedIn(broker)
        let fitting = (limit - 1) / 2 // 2 × 512 + "\n" = 1025

        // At the limit: frames never exceed it, and replies are batched right up to it.
        var sharedFrames = 0
        for _ in 0..<5 where sharedFrames == 0 {
            try client.send(pings(count: 40, replySize: fitting, base: base))
            let frames = client.readFrames(objects: 40)
            #expect(frames.reduce(0) { $0 + $1.split(separator: "\n").count } == 40)
            #expect(frames.allSatisfy { $0.utf8.count <= limit }, "\(frames.map(\.utf8.count).max() ?? 0) > \(limit)")
            sharedFrames += frames.filter { $0.split(separator: "\n").count == 2 && $0.utf8.count == limit }.count
        }
        #expect(sharedFrames >= 1, "pipelined replies of \(fitting) bytes were batched two to a \(limit)-byte frame")

        // One past: two replies would need limit + 2 bytes, so each frame carries one.
        try client.send(pings(count: 40, replySize: fitting + 1, base: base))
        let single = client.readFrames(objects: 40)
        #expect(single.count == 40)
        #expect(single.allSatisfy { !$0.contains("\n") && $0.utf8.count == fitting + 1 })

        // An object larger than the limit is not split or refused: it goes alone.
        try client.send(pings(count: 5, replySize: limit + 100, base: base))
        let large = client.readFrames(objects: 5)
        #expect(large.count == 5)
        #expect(large.allSatisfy { !$0.contains("\n") && $0.utf8.count == limit + 100 })
    }

    @Test("maxOutboundBytes: a stalled reader owed exactly the limit is not cut and gets every reply")
    func outboundAtTheLimit() throws {
        let limit = 65536
        let broker = try BrokerProcess(config: ["limits": Self.fastRequests.merging(["maxOutboundBytes": limit]) { $1 }])
        let (stalled, base) = try loggedIn(broker)
        let bystander = try broker.session("bystander")
        // 16 replies of 4096 bytes: exactly the limit, all queued while the client reads nothing.
        try stalled.send(pings(count: 16, replySize: limit / 16, base: base))
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_requests_total")) ?? 0 >= 2 + 1 + 16 })
        #expect(try bystander.request("ping").ok) // the broker has handled everything sent before
        #expect(try broker.metric("rollcall_slow_consumer_cuts_total") == 0)
        let frames = stalled.readFrames(objects: 16)
        #expect(frames.reduce(0) { $0 + $1.split(separator: "\n").count } == 16)
        #expect(frames.reduce(0) { $0 + $1.split(separator: "\n").reduce(0) { $0 + $1.utf8.count } } == limit)
        #expect(stalled.closeCode == nil)
        #expect(try broker.metric("rollcall_slow_consumer_cuts_total") == 0)
    }
}
