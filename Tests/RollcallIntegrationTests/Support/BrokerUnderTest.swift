import Foundation
import RollcallClient
import Testing

/// What a test talks to: one `rollcall` process, or a cluster of nodes that must behave as one
/// broker (PROTOCOL §9). Tests open every client through ``connect(recordTranscript:)`` or
/// ``session(_:recordTranscript:)``, so one test body runs against either.
protocol BrokerUnderTest: AnyObject {
    /// The URL a client would be given (`ws://127.0.0.1:PORT/v1`): the broker's, or the proxy's
    /// in front of a cluster.
    var url: String { get }

    /// Opens a WebSocket (no login). In a cluster each call lands on another node.
    func connect(recordTranscript: Bool) throws -> RollcallConnection

    /// Opens a WebSocket and logs in as `userId`; throws unless the login succeeds. In a
    /// cluster each call lands on another node.
    func session(_ userId: String, recordTranscript: Bool) throws -> RollcallConnection

    /// A sample of `/metrics`, e.g. `rollcall_sessions{state="held"}`; in a cluster the sum
    /// over the running nodes (nil when no node has it).
    func metric(_ sample: String) throws -> Int?
}

extension BrokerUnderTest {
    /// Opens a WebSocket (no login) without a transcript.
    func connect() throws -> RollcallConnection { try connect(recordTranscript: false) }

    /// Logs in as `userId` without a transcript.
    func session(_ userId: String) throws -> RollcallConnection { try session(userId, recordTranscript: false) }
}

extension BrokerProcess: BrokerUnderTest {
    var url: String { url(path: "/v1") }

    func connect(recordTranscript: Bool) throws -> RollcallConnection {
        try connect(path: "/v1", recordTranscript: recordTranscript)
    }
}

/// The shapes a test can run against; pass them as `@Test(arguments:)`.
///
/// - `single`: one broker process, as before cluster mode.
/// - `cluster`: three nodes on one redis-server; the test's clients connect directly to the
///   nodes in rotation (n1, n2, n3, n1, …), so consecutive clients are on different nodes.
/// - `clusterProxy`: the same cluster, every client through nginx's round-robin in front of it.
/// - `redisCluster`: three nodes on the process's shared Redis Cluster (``ProcessRedisCluster``:
///   3 masters with a replica each) under a key prefix of the test's own, clients on the nodes
///   in rotation as with `cluster`.
enum Topology: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case single, cluster, clusterProxy, redisCluster

    /// What every cross-node presence test runs on: one broker, three nodes on one
    /// redis-server, and three nodes on a Redis Cluster.
    static let singleAndCluster: [Topology] = [.single, .cluster, .redisCluster]

    var testDescription: String { rawValue }

    /// Starts what the test talks to, with the test's config deep-merged over the harness's.
    func start(config: [String: Any] = [:]) throws -> any BrokerUnderTest {
        switch self {
        case .single: try BrokerProcess(config: config)
        case .cluster: try ClusterProcess(config: config, routing: .direct)
        case .clusterProxy: try ClusterProcess(config: config, routing: .proxy)
        case .redisCluster: try ClusterProcess(config: config, routing: .direct, redisCluster: ProcessRedisCluster.nodes())
        }
    }
}
