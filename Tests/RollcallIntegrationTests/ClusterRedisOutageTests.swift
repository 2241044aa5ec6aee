import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §9 with Redis unreachable, through the real binaries: requests that need Redis
/// answer `UNAVAILABLE` with `retryAfterMs` (login too) and never wait longer than
/// `nodeTimeoutSeconds`; `ping` works; connections stay open; everything works again once
/// Redis answers. (`/healthz` and the gauges: ``ClusterPresenceTests``.)
@Suite("Cluster with Redis unreachable", .serialized)
struct ClusterRedisOutageTests {
    @Test("Redis stopped (SIGSTOP): UNAVAILABLE with retryAfterMs, login too; ping answers; connections stay open; back after SIGCONT")
    func unavailableWhileRedisIsStopped() throws {
        // nodeTimeoutSeconds 3, not the harness' 1: after SIGCONT every node must beat within
        // the grace window of nodeTimeoutSeconds, and on a CI machine running suites in parallel
        // a node was starved past 1 s, declared dead and fenced (1001), which is right but not
        // what this test is about. The login timeout outlasts the test.
        let nodeTimeout = 3.0
        let cluster = try ClusterProcess(config: ["cluster": ["nodeTimeoutSeconds": nodeTimeout, "heartbeatSeconds": 0.5],
                                                  "limits": ["loginTimeoutSeconds": 120]])
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("lobby").ok)
        let bob = try cluster.session("bob", node: 1)
        let fresh = try cluster.connect(node: 2)

        let stoppedAt = Date()
        cluster.redis.suspend()
        defer { cluster.redis.resume() }
        let noticed = eventually(timeout: 15) {
            (0..<3).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/healthz").status) == 503 }
        }
        let noticedAfter = Date().timeIntervalSince(stoppedAt)
        #expect(noticed, "every node notices the outage")
        #expect(noticedAfter < nodeTimeout + 1.5, "noticed after \(noticedAfter) s; nodeTimeoutSeconds is \(nodeTimeout) (1.5 s slack for a loaded machine)")

        let started = Date()
        let refused = try alice.channelOp("setState", "lobby", ["state": ["k": "v"]])
        #expect(Date().timeIntervalSince(started) < nodeTimeout - 1, "answered at once, not after a Redis timeout")
        #expect(refused.errorCode == .unavailable, "\(refused)")
        #expect((refused.retryAfterMs ?? 0) > 0, "\(refused)")
        #expect(try bob.join("lobby").errorCode == .unavailable)
        #expect(try alice.request("ping").ok, "ping needs no Redis")
        let login = try fresh.login(userId: "carol")
        #expect(login.errorCode == .unavailable && (login.retryAfterMs ?? 0) > 0, "\(login)")

        cluster.redis.resume()
        // Each node reconnects on its own backoff: wait until all are healthy again, then, like
        // a client, retry what was refused until it goes through.
        let healthy = eventually(timeout: 15) {
            (0..<3).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/healthz").status) == 200 }
        }
        #expect(healthy, "\(cluster.describeNodes())")
        var set: Result<Reply, any Error>?
        #expect(eventually(timeout: 10) {
            set = Result { try alice.channelOp("setState", "lobby", ["state": ["k": "v"]]) }
            return (try? set?.get().ok) == true
        }, "\(String(describing: set))\n\(cluster.describeNodes())")
        var again: Result<Reply, any Error>?
        #expect(eventually(timeout: 10) {
            again = Result { try fresh.login(userId: "carol") }
            return (try? again?.get().ok) == true
        }, "the connection stayed open; the login works now: \(String(describing: again))\n\(cluster.describeNodes())")
        var joinedResult: Result<Reply, any Error>?
        #expect(eventually(timeout: 10) {
            joinedResult = Result { try bob.join("lobby") }
            return (try? joinedResult?.get().ok) == true
        }, "\(String(describing: joinedResult))\n\(cluster.describeNodes())")
        let joined = try? joinedResult?.get()
        #expect(joined?["occupancy"]?.numberValue?.intValue == 2)
    }

    @Test("a request in flight when Redis stops answers within nodeTimeoutSeconds (plus scheduling slack)")
    func noRequestWaitsLongerThanTheNodeTimeout() throws {
        let cluster = try ClusterProcess()  // nodeTimeoutSeconds 1
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("lobby").ok)
        cluster.redis.suspend()
        defer { cluster.redis.resume() }
        let started = Date()
        let reply = try alice.channelOp("setState", "lobby", ["state": ["k": "v"]])
        let waited = Date().timeIntervalSince(started)
        #expect(reply.errorCode == .unavailable, "\(reply)")
        #expect(waited < 2.5, "waited \(waited) s; nodeTimeoutSeconds is 1")
    }

    @Test("an outage longer than nodeTimeoutSeconds declares no node dead: afterwards no timeout or leave, every node counts 3 again")
    func outageKillsNoNode() throws {
        // nodeTimeoutSeconds 2.5, not 1: every node must beat within that window after SIGCONT,
        // and a CI machine running suites in parallel can starve a node for over a second.
        let nodeTimeout = 2.5
        let cluster = try ClusterProcess(config: ["presence": ["timeoutSeconds": 1],
                                                  "cluster": ["nodeTimeoutSeconds": nodeTimeout, "heartbeatSeconds": 0.5]])
        let members = try (0..<3).map { try cluster.session("m\($0)", node: $0) }
        for member in members { #expect(try member.join("lobby").ok) }
        let watcher = try cluster.session("watcher", node: 0)
        #expect(try watcher.join("lobby").ok)
        _ = try watcher.presenceEvent("snapshot", channel: "lobby")

        cluster.redis.suspend()
        // The outage must outlast nodeTimeoutSeconds + the hold (1 s) by a margin: that is
        // the point of the test, so it waits for time here, on top of the nodes noticing.
        let outageEnds = Date(timeIntervalSinceNow: nodeTimeout + 2)
        let down = eventually(timeout: 10) {
            Date() >= outageEnds && (0..<3).allSatisfy { (try? cluster.node($0).metric("rollcall_redis_connected")) == 0 }
        }
        cluster.redis.resume()
        #expect(down, "\(cluster.describeNodes())")
        #expect(cluster.waitUntilFormed(timeout: 15), "\(cluster.describeNodes())")
        // Give a wrongful death sentence the time to happen (nodeTimeoutSeconds and the hold) before looking.
        let settled = Date(timeIntervalSinceNow: nodeTimeout + 2)
        _ = eventually(timeout: 10) { Date() >= settled }
        let events = try watcher.presenceEventsAfterBarrier().filter { $0.type != "snapshot" }
        #expect(events.isEmpty, "no node was declared dead: \(events)\n\(cluster.describeNodes())")
        for (index, member) in members.enumerated() {
            #expect(try member.request("ping").ok, "m\(index) on n\(index + 1) is still connected")
        }
        let online = try watcher.onlineUsers("lobby")
        #expect(online.keys.sorted() == ["m0", "m1", "m2", "watcher"], "\(online)")
    }

    @Test("a member that closes while Redis is stopped is gone everywhere once Redis is back (its end ran late, its answer was lost)")
    func closedDuringTheOutageLeaves() throws {
        let cluster = try ClusterProcess()  // nodeTimeoutSeconds 1
        let members = try (0..<3).map { try cluster.session("m\($0)", node: $0) }
        for member in members { #expect(try member.join("lobby").ok) }
        let watcher = try cluster.session("watcher", node: 0)
        #expect(try watcher.join("lobby").ok)

        cluster.redis.suspend()
        defer { cluster.redis.resume() }
        // Closed at once: each node sends session.end into the stopped Redis; the watchdog
        // fails it, and Redis runs it anyway once it is back.
        members[1].close()
        members[2].close()
        let down = eventually(timeout: 10) {
            (0..<3).allSatisfy { (try? cluster.node($0).metric("rollcall_redis_connected")) == 0 }
        }
        #expect(down, "\(cluster.describeNodes())")
        cluster.redis.resume()
        #expect(cluster.waitUntilFormed(timeout: 15), "\(cluster.describeNodes())")
        var listed: [String] = []
        let left = eventually(timeout: 15) {
            listed = (try? watcher.onlineUsers("lobby").keys.sorted()) ?? []
            return listed == ["m0", "watcher"]
        }
        #expect(left, "still listed: \(listed)")
    }
}

/// Redis errors that mean "not now" (PROTOCOL §9 1.2): answered `UNAVAILABLE` with
/// `retryAfterMs`, never `INTERNAL`, and the request goes through once Redis takes writes again.
@Suite("Cluster with Redis saying not now", .serialized)
struct ClusterRedisNotNowTests {
    @Test("Redis out of memory (OOM): writes answer UNAVAILABLE with retryAfterMs, not INTERNAL; they work again after")
    func outOfMemoryIsUnavailable() throws {
        let cluster = try ClusterProcess()
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("lobby").ok)
        _ = try RedisWire.command(port: cluster.redisPort, ["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        _ = try RedisWire.command(port: cluster.redisPort, ["CONFIG", "SET", "maxmemory", "1"])
        var refused: Reply?
        #expect(eventually(timeout: 10) {
            refused = try? alice.channelOp("setState", "lobby", ["state": ["k": "v"]])
            return refused?.errorCode == .unavailable
        }, "\(String(describing: refused))")
        #expect((refused?.retryAfterMs ?? 0) > 0, "\(String(describing: refused))")
        #expect(try alice.join("hall").errorCode == .unavailable)
        _ = try RedisWire.command(port: cluster.redisPort, ["CONFIG", "SET", "maxmemory", "0"])
        #expect(eventually(timeout: 10) { (try? alice.channelOp("setState", "lobby", ["state": ["k": "v"]]).ok) == true })
        #expect(try alice.join("hall").ok)
    }
}
