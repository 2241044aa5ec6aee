@testable import RollcallCore
@testable import RollcallRedisEngine
import Testing

/// The scanner's slices of the key groups (docs/cluster.md, "The scans").
@Suite("Key group rounds")
struct KeyGroupRoundTests {
    @Test("1024 groups in a 1 s round at 0.1 s ticks: ten slices of at most 103, each group once per round, in order, then again")
    func everyGroupOncePerRound() {
        var round = KeyGroupRound(count: 1024, roundSeconds: 1, tickSeconds: 0.1)
        #expect(round.ticksPerRound == 10)
        let slices = (0..<10).map { _ in round.slice() }
        #expect(slices.allSatisfy { $0.count <= 103 })
        #expect(slices.flatMap { $0 }.prefix(1024) == ArraySlice(0..<1024))
        #expect(Set(slices.flatMap { $0 }) == Set(0..<1024))
        // The next round goes on where this one stopped (103 × 10 = 1030 wrapped by 6).
        #expect(round.slice().first == 1030 % 1024)
    }

    @Test("one group, or a round no longer than a tick: every tick takes every group", arguments: [
        (count: 1, round: 1.0, tick: 0.1), (count: 1024, round: 1.0, tick: 1.0), (count: 1024, round: 0.5, tick: 1.0), (count: 8, round: 0.05, tick: 0.1),
    ])
    func everyGroupEachTick(count: Int, round seconds: Double, tick: Double) {
        var round = KeyGroupRound(count: count, roundSeconds: seconds, tickSeconds: tick)
        for _ in 0..<3 { #expect(Set(round.slice()) == Set(0..<count)) }
    }

    @Test("the flushes' round is half nodeTimeoutSeconds, at most the reaper's second")
    func flushRound() {
        var cluster = Configuration.Cluster()
        cluster.heartbeatSeconds = 0.1
        cluster.nodeTimeoutSeconds = 1
        #expect(ClusterSessions.flushRoundSeconds(cluster) == 0.5)
        cluster.nodeTimeoutSeconds = 5
        #expect(ClusterSessions.flushRoundSeconds(cluster) == ClusterSessions.reapRoundSeconds)
    }
}
