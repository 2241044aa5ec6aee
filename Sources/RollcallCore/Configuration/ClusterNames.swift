/// The rules for the names cluster mode writes into Redis: `cluster.keyPrefix` and
/// `cluster.nodeId` (PROTOCOL §9). Both end up inside key names and pub/sub channel names.
public enum ClusterNames {
    /// Longest key prefix, in bytes.
    public static let maxKeyPrefixBytes = 64
    /// Longest node id, in bytes.
    public static let maxNodeIdBytes = 64

    /// Why `prefix` cannot be a key prefix (printable ASCII without spaces, 1–64 bytes), or nil.
    public static func problem(withKeyPrefix prefix: String) -> String? {
        guard !prefix.isEmpty, prefix.utf8.count <= maxKeyPrefixBytes else {
            return "must be 1 to \(maxKeyPrefixBytes) bytes"
        }
        guard prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be printable ASCII without spaces"
        }
        return nil
    }

    /// Why `id` cannot be a node id (letters, digits, `.`, `_`, `-`; 1–64 bytes), or nil.
    public static func problem(withNodeId id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= maxNodeIdBytes else { return "must be 1 to \(maxNodeIdBytes) bytes" }
        let allowed = id.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
        return allowed ? nil : "may hold only letters, digits, '.', '_' and '-'"
    }
}
