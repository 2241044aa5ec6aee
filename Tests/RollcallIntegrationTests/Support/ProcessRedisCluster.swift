import Foundation
import RollcallTestSupport

/// The one Redis Cluster the `redisCluster` topology's tests share in a test process: 3 masters
/// with a replica each (``RedisClusterNodes``), started by the first test that asks for it
/// (the others wait for that start), killed when the process exits. Tests never see each
/// other's keys: each ``ClusterProcess`` runs its nodes under a `cluster.keyPrefix` of its own.
///
/// Its `cluster-node-timeout` is 5 s, not the 1 s of the clusters a test kills masters in: no
/// test fails a master of this one, and a 2-core machine running both test shards must not
/// make it fail over by itself (a master that misses pings for 1 s under load).
enum ProcessRedisCluster {
    /// The shared cluster, started at the first call; throws that start's error on every call
    /// when it failed (the start is not tried again).
    static func nodes() throws -> RedisClusterNodes { try started.get() }

    /// `cluster-node-timeout` of the shared cluster, in milliseconds.
    static let nodeTimeoutMilliseconds = 5000

    /// Started once (a static's initializer runs once, the other callers blocked until it ends).
    private static let started: Result<RedisClusterNodes, Error> = {
        let result = Result { try RedisClusterNodes(masters: 3, replicasPerMaster: 1, nodeTimeoutMilliseconds: nodeTimeoutMilliseconds) }
        if case .success(let cluster) = result {
            stopAtExit.withLock { $0 = cluster }
            atexit { ProcessRedisCluster.stopAtExit.withLock { $0?.killEveryNode() } }
        }
        return result
    }()

    /// What the exit handler kills (a C function pointer cannot capture it).
    private static let stopAtExit = LockedValue<RedisClusterNodes?>(nil)
}

/// A value behind a lock.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { lock.withLock { body(&value) } }
}
