import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 15: a session whose hold ends while Redis is stopped or restarting must still
/// end once Redis is back: gone from its channels and from Redis, its user offline. Both pass
/// on this code, alone; the seeded fault runs that found item 15 had churn and other faults
/// around it (the chaos suite replays them), and item 2's dropped leave is one way to get there.
@Suite("Cluster: a hold that ends while Redis is out", .serialized)
struct ClusterHoldEndsDuringOutageTests {
    @Test("Redis stopped (SIGSTOP) across the end of a hold: the session ends once Redis is back")
    func theHoldEndsAfterAPause() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "holdout:")
        let watcher = try bed.login("watcher", on: 1)
        let alice = try bed.login("alice", on: 0, ["presenceTimeout": .int(5)])
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        bed.disconnect(alice, abnormally: true)
        // Let the hold reach Redis, then stop Redis for longer than what is left of the hold.
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", "holdout:{0}held"])) == ":1" }, what: "the hold recorded")
        bed.redis.suspend()
        let stoppedAt = Date()
        try? bed.pump(until: { Date().timeIntervalSince(stoppedAt) > 6 }, timeout: 7, what: "the hold's end, Redis stopped")
        bed.redis.resume()
        try bed.pump(until: {
            watcher.events.contains { $0.string("type") == "timeout" && $0.string("publisher") == "alice" }
        }, timeout: 15, what: "alice's timeout once Redis is back")
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", "holdout:{0}s:\(alice.sessionId)"])) == ":0" }, what: "alice's record gone")
        let status = try bed.request(watcher, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status["result"]?["statuses"]?.arrayValue?.first?.string("status") == "offline", "\(status.compactString)")
    }

    @Test("Redis shut down (SAVE) and started again across the end of a hold: the session ends once Redis is back")
    func theHoldEndsAfterARestart() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "holdrs:")
        let watcher = try bed.login("watcher", on: 1)
        let alice = try bed.login("alice", on: 0, ["presenceTimeout": .int(5)])
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", "holdrs:{0}held"])) == ":1" }, what: "the hold recorded")
        _ = try? bed.redis.command(["SHUTDOWN", "SAVE"])
        let stoppedAt = Date()
        try? bed.pump(until: { Date().timeIntervalSince(stoppedAt) > 6 }, timeout: 7, what: "the hold's end, Redis down")
        try bed.redis.startAgainAfterShutdown()
        // The watcher's node may resubscribe after the timeout event went out: it then resyncs
        // (a snapshot), so the check is on Redis and on the listing, not on the event.
        let gone = (try? bed.pump(until: { (try? bed.redis.command(["EXISTS", "holdrs:{0}s:\(alice.sessionId)"])) == ":0" },
                                  timeout: 15, what: "alice's record gone")) != nil
        #expect(gone, "alice's session record is gone: held \((try? bed.redis.command(["ZCARD", "holdrs:{0}held"])) ?? "?"), ending \((try? bed.redis.command(["ZCARD", "holdrs:{0}ending"])) ?? "?")")
        let left = (try? bed.pump(until: { (try? bed.redis.command(["ZSCORE", "holdrs:{0}c:m:4:room:m", "alice"])) == "$-1" },
                                  timeout: 15, what: "alice gone from room")) != nil
        #expect(left, "alice left room in Redis; sc \((try? bed.redis.command(["SCARD", "holdrs:{0}sc:\(alice.sessionId)"])) ?? "?"), ending \((try? bed.redis.command(["ZCARD", "holdrs:{0}ending"])) ?? "?")")
        let listing = try bed.request(watcher, "getOnlineUsers", ["channel": .string("room")])
        #expect(listing["result"]?["users"]?.arrayValue?.compactMap { $0.string("userId") } == ["watcher"], "\(listing.compactString)")
        let status = try bed.request(watcher, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status["result"]?["statuses"]?.arrayValue?.first?.string("status") == "offline", "\(status.compactString)")
    }
}
