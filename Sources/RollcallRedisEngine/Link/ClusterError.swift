import RollcallProtocol

/// Why cluster mode cannot start, with a stable code; its description is the message alone.
public typealias ClusterError = CodedError<ClusterErrorCode>

/// The stable codes of a ``ClusterError``.
public enum ClusterErrorCode: String, StableErrorCode {
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

    /// The message names the key to fix.
    public static var descriptionStartsWithCode: Bool { false }
}
