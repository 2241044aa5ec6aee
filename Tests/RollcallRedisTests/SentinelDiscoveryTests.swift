@testable import RollcallRedis
import Testing

/// How a node finds the master behind Sentinel (``SentinelDiscovery``), driven with plain
/// replies: no sockets, no sentinel.
@Suite("SentinelDiscovery")
struct SentinelDiscoveryTests {
    static func address(_ host: String, _ port: String) -> RedisReply {
        .array([.bulk(Array(host.utf8)), .bulk(Array(port.utf8))])
    }

    @Test func theFirstSentinelThatNamesTheMasterEndsTheRound() {
        var discovery = SentinelDiscovery(masterName: "m", sentinelCount: 3)
        #expect(discovery.start() == .ask(sentinel: 0))
        #expect(discovery.answered(Self.address("127.0.0.1", "6380")) == .found(RedisHostPort(host: "127.0.0.1", port: 6380)))
        #expect(discovery.asking == nil)
        #expect(discovery.start() == .ask(sentinel: 0), "the next round asks the same sentinel first")
    }

    @Test func unreachableSlowOrIgnorantSentinelsPassTheTurnAndTheOneThatAnsweredIsAskedFirstNextTime() {
        var discovery = SentinelDiscovery(masterName: "m", sentinelCount: 3)
        #expect(discovery.start() == .ask(sentinel: 0))
        #expect(discovery.failed(RedisError(.connectFailed, "refused")) == .ask(sentinel: 1))
        #expect(discovery.answered(.null) == .ask(sentinel: 2), "a sentinel that does not know the name")
        #expect(discovery.answered(Self.address("redis-b.internal", "6379")) == .found(RedisHostPort(host: "redis-b.internal", port: 6379)))
        #expect(discovery.start() == .ask(sentinel: 2))
        #expect(discovery.failed(RedisError(.timeout, "slow")) == .ask(sentinel: 0), "the turn wraps around")
    }

    @Test func aRoundFailsOnceEverySentinelHadItsTurnNamingWhy() {
        var discovery = SentinelDiscovery(masterName: "mymaster", sentinelCount: 3)
        _ = discovery.start()
        _ = discovery.failed(RedisError(.connectFailed, "refused"))
        _ = discovery.answered(.error("ERR unknown command"))
        guard case .failed(let error) = discovery.answered(.null) else {
            Issue.record("the round should have failed")
            return
        }
        #expect(error.code == .masterNotFound)
        #expect(error.message.contains("mymaster") && error.message.contains("REDIS_CONNECT_FAILED")
                && error.message.contains("ERR unknown command") && error.message.contains("does not know"))
        #expect(discovery.asking == nil)
        #expect(discovery.start() == .ask(sentinel: 0), "a new round after the backoff starts over")
    }

    @Test func aMalformedAddressIsNotTakenForTheMaster() {
        var discovery = SentinelDiscovery(masterName: "m", sentinelCount: 2)
        _ = discovery.start()
        #expect(discovery.answered(Self.address("127.0.0.1", "0")) == .ask(sentinel: 1))
        guard case .failed(let error) = discovery.answered(.array([.bulk(Array("x".utf8))])) else {
            Issue.record("an answer that is not host and port ends the round without a master")
            return
        }
        #expect(error.message.contains("not host and port") && error.message.contains("unexpected answer"))
    }

    @Test func anAddressThatIsNotTheMasterMakesTheNextRoundStartWithTheFollowingSentinel() {
        var discovery = SentinelDiscovery(masterName: "m", sentinelCount: 3)
        _ = discovery.start()
        _ = discovery.failed(RedisError(.connectFailed, "refused"))
        #expect(discovery.answered(Self.address("10.0.0.1", "6379")) == .found(RedisHostPort(host: "10.0.0.1", port: 6379)))
        discovery.notMaster()
        #expect(discovery.start() == .ask(sentinel: 2), "sentinel 2 (index 1) had a stale view: 3 is asked first")
        #expect(discovery.answered(Self.address("10.0.0.2", "6379")) == .found(RedisHostPort(host: "10.0.0.2", port: 6379)))
    }

    @Test func oneSentinelIsAskedOncePerRound() {
        var discovery = SentinelDiscovery(masterName: "m", sentinelCount: 1)
        #expect(discovery.start() == .ask(sentinel: 0))
        guard case .failed = discovery.failed(RedisError(.timeout, "slow")) else {
            Issue.record("one sentinel, one turn")
            return
        }
    }
}
