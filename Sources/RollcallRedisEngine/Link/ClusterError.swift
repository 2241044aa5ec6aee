/// Why cluster mode cannot start, with a stable code.
public struct ClusterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable codes.
    public enum Code: String, Sendable {
        /// `cluster.redis` is null.
        case notClustered = "CLUSTER_NOT_CONFIGURED"
        /// A cluster key cannot be used (the message names it).
        case invalidConfiguration = "CLUSTER_INVALID_CONFIGURATION"
        /// Redis holds keys under `cluster.keyPrefix` that no Rollcall node wrote.
        case foreignData = "CLUSTER_FOREIGN_DATA"
        /// A section differs from the running nodes' (the message names it).
        case configurationMismatch = "CLUSTER_CONFIGURATION_MISMATCH"
        /// Redis could not be reached at start.
        case unreachable = "CLUSTER_UNREACHABLE"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
