import Foundation
@testable import RollcallCore
@testable import RollcallRedisEngine

extension ClusterBed {
    /// A bed of `nodes` nodes laid out as on Redis Cluster (1024 key groups) on one
    /// redis-server, `configure` applied to its configuration first, with the key names its
    /// nodes use.
    static func withClusterKeyGroups(nodes: Int, prefix: String, heartbeatSeconds: Double = 0.1,
                                     configure: (inout Configuration) -> Void = { _ in }) throws -> (bed: ClusterBed, keys: ClusterKeys) {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        configure(&configuration)
        let bed = try ClusterBed(nodes: nodes, configuration: configuration, prefix: prefix, heartbeatSeconds: heartbeatSeconds)
        return (bed, ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount)))
    }
}
