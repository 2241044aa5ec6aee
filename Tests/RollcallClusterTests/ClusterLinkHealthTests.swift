import Foundation
import Logging
import RollcallRedisEngine
import RollcallCore
import Testing

/// The `/readyz` reason of a cluster node's link (PROTOCOL §1, 1.2): "not joined yet" until its
/// Redis links have connected once, nothing while they are up. (Redis unreachable and Redis
/// answering errors: `ClusterPresenceTests` on the real binaries.)
@Suite("Cluster: link health")
struct ClusterLinkHealthTests {
    @Test("a link that never connected says the node has not joined yet; once connected, nothing")
    func notJoinedYet() throws {
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: "health:")
        #expect(bed.links[0].healthProblem == nil)
        var configuration = Configuration()
        configuration.cluster.redis = bed.redis.url()
        configuration.cluster.keyPrefix = "health:"
        configuration.cluster.heartbeatSeconds = 0.1
        configuration.cluster.nodeTimeoutSeconds = 1
        let epoch = try ClusterStartCheck.run(configuration: configuration, nodeId: "late")
        let link = try ClusterLink(configuration: configuration, nodeId: "late", epoch: epoch, loop: bed.loop, logger: Logger(label: "health"))
        defer { link.close() }
        #expect(link.healthProblem?.hasPrefix("cluster: not joined yet") == true, "\(link.healthProblem ?? "nil")")
        link.start()
        try bed.pump(until: { link.isConnected }, what: "the late link connected")
        #expect(link.healthProblem == nil)
    }
}
