import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Chaos finding (issue 29; seeds 107148248706935, 53124657195976, 3423437562948): a login
/// answered `UNAVAILABLE` whose `session.claim` (a resume) or `session.start` ran in Redis all
/// the same — its answer lost, or the script queued in a paused Redis and run once it was back
/// — left a session recorded live on a node that had given up on it and never served or ended
/// it: its user listed, and `online`, for good. The node now makes such a call void
/// (`session.cancelClaim`, `session.cancelStart`), so the login changed nothing, or its retry
/// completes it (PROTOCOL §9, docs/protocol.md).
@Suite("Cluster: a login answered UNAVAILABLE leaves no session behind")
struct ClusterUnavailableLoginTests {
    private func isScript(_ name: String) -> ([StoreCommand]) -> Bool {
        { commands in commands.contains { if case .script(let script, _) = $0 { script.name == name } else { false } } }
    }

    /// Alice in `room` on node 0, held after her connection dropped; `watcher` on node 1.
    private func heldAlice(_ bed: ClusterBed, prefix: String) throws -> (alice: ClusterBed.Client, watcher: ClusterBed.Client) {
        let watcher = try bed.login("watcher", on: 1)
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}held"])) == ":1" }, what: "alice held in Redis")
        return (alice, watcher)
    }

    /// Resumes `alice`'s session on node 1: the first attempt is answered `UNAVAILABLE`, the
    /// retry resumes the same session.
    private func expectRetryResumes(_ bed: ClusterBed, _ alice: ClusterBed.Client, prefix: String) throws {
        let retry = try bed.login("alice", on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(retry.resumed, "the retry resumes the session")
        #expect(retry.sessionId == alice.sessionId)
        #expect(try bed.redis.command(["HSTRLEN", prefix + "{0}s:" + alice.sessionId, "node"]) == ":2", "live on n2")
        #expect(try bed.redis.command(["ZCARD", prefix + "{0}held"]) == ":0")
        #expect(try bed.redis.command(["ZCARD", prefix + "{0}us:5:alice"]) == ":1", "one session of alice")
    }

    private func firstAttempt(_ bed: ClusterBed, _ alice: ClusterBed.Client) throws -> JSON {
        try bed.request(bed.open(on: 1), "login", ["userId": .string("alice"), "resumeToken": .string(alice.resumeToken)])
    }

    @Test("a resume whose claim ran but whose answer was lost: the retry resumes the same session, with the messages kept for it")
    func aClaimWhoseAnswerWasLostIsUndone() throws {
        let prefix = "claimlost:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let (alice, watcher) = try heldAlice(bed, prefix: prefix)
        #expect(try bed.request(watcher, "publish", ["channel": .string("room"), "message": .string("while away")])["ok"]?.boolValue == true)
        bed.failFirstCall(running: "session.claim", on: 1, answerLost: true)
        let first = try firstAttempt(bed, alice)
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        try expectRetryResumes(bed, alice, prefix: prefix)
        let back = try #require(bed.clients.values.first { $0.resumed && $0.sessionId == alice.sessionId })
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
        let messages = back.events.filter { $0.string("event") == "message" }.compactMap { $0["message"] }
        #expect(messages == ["while away"], "the message the lost claim handed over, once: \(messages)")
    }

    @Test("a resume whose claim runs only after its node gave up on it: the claim finds nothing, the retry resumes")
    func aClaimThatRunsLateFindsNothing() throws {
        let prefix = "claimlate:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let (alice, _) = try heldAlice(bed, prefix: prefix)
        var late: [StoreCommand]?
        let isClaim = isScript("session.claim")
        bed.dropsStoreCall = { node, commands in
            guard node == 1, late == nil, isClaim(commands) else { return false }
            late = commands
            return true
        }
        let first = try firstAttempt(bed, alice)
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        // The node sent its cancel as it answered; the claim it gave up on runs after it, on the
        // same link, as when it waited in a paused Redis. Its answer goes to a ticket nobody
        // waits for.
        let claim = try #require(late)
        bed.links[1].perform(.store(StoreTicket(UInt64.max), claim, .request))
        // The retry's own claim runs after it, on the same link.
        try expectRetryResumes(bed, alice, prefix: prefix)
    }

    @Test("a login whose session.start ran but whose answer was lost: no session stays, the user goes offline")
    func aStartWhoseAnswerWasLostIsEnded() throws {
        let prefix = "startlost:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let watcher = try bed.login("watcher", on: 1)
        bed.failFirstCall(running: "session.start", on: 0, answerLost: true)
        let first = try bed.request(bed.open(on: 0), "login", ["userId": .string("alice")])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}us:5:alice"])) == ":0" }, timeout: 3,
                     what: "alice's session gone from Redis")
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}ending"])) == ":0" }, timeout: 3,
                     what: "the end finished")
        let status = try bed.request(watcher, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status["result"]?["statuses"]?.arrayValue?.first?.string("status") == "offline", "\(status.compactString)")
        // The retry is a login like any other.
        let retry = try bed.login("alice", on: 0)
        #expect(try bed.redis.command(["ZCARD", prefix + "{0}us:5:alice"]) == ":1")
        #expect(!retry.sessionId.isEmpty)
    }

    @Test("only a call the link never sent needs no cancel: Redis cannot run it later")
    func aCallNeverSentNeedsNoCancel() {
        #expect(!StoreFailure(RedisError(.unavailable, "link down")).mayHaveReachedRedis)
        for code in [RedisErrorCode.timeout, .connectionLost, .closed] {
            #expect(StoreFailure(RedisError(code, "in flight")).mayHaveReachedRedis, "\(code)")
        }
    }

    @Test("a login whose session.start runs only after its node gave up on it: the start records nothing")
    func aStartThatRunsLateRecordsNothing() throws {
        let prefix = "startlate:"
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: prefix)
        var late: [StoreCommand]?
        let isStart = isScript("session.start")
        bed.dropsStoreCall = { _, commands in
            guard late == nil, isStart(commands) else { return false }
            late = commands
            return true
        }
        let first = try bed.request(bed.open(on: 0), "login", ["userId": .string("alice")])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        // As above: the cancel went out with the answer, the late start runs after it.
        let start = try #require(late)
        bed.links[0].perform(.store(StoreTicket(UInt64.max), start, .request))
        // The next login's calls run after it, on the same link.
        let watcher = try bed.login("watcher", on: 0)
        #expect(try bed.redis.command(["ZCARD", prefix + "{0}us:5:alice"]) == ":0", "no session of alice")
        let status = try bed.request(watcher, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status["result"]?["statuses"]?.arrayValue?.first?.string("status") != "online", "\(status.compactString)")
    }
}
