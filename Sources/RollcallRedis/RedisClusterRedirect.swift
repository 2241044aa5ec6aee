/// What a Redis Cluster node's error reply asks of the client, read from its first word:
/// `MOVED slot host:port` (the slot lives there now: refresh the map, send it there),
/// `ASK slot host:port` (this one command goes there, after `ASKING`: the slot is being
/// migrated), or a cluster-wide "not now" (`TRYAGAIN`, `CLUSTERDOWN`: answer UNAVAILABLE).
public enum RedisClusterRedirect: Equatable {
    /// `-MOVED`: the slot's master is `to` for good.
    case moved(slot: Int, to: RedisHostPort)
    /// `-ASK`: this command (only) goes to `to`, preceded by `ASKING`.
    case ask(slot: Int, to: RedisHostPort)

    /// The redirection in an error line, or nil for any other error. An empty host (Redis'
    /// "unknown endpoint") is the host of the node that answered, `answeredBy`.
    public init?(errorLine line: String, answeredBy: RedisHostPort) {
        let words = line.split(separator: " ")
        guard words.count == 3, let slot = Int(words[1]), (0..<RedisClusterSlot.count).contains(slot),
              let colon = words[2].lastIndex(of: ":"), let port = Int(words[2][words[2].index(after: colon)...]),
              (1...65535).contains(port)
        else { return nil }
        var host = String(words[2][..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let address = RedisHostPort(host: host.isEmpty ? answeredBy.host : host, port: port)
        switch words[0] {
        case "MOVED": self = .moved(slot: slot, to: address)
        case "ASK": self = .ask(slot: slot, to: address)
        default: return nil
        }
    }
}
