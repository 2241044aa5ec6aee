import Foundation

/// A throwaway Redis Cluster for tests: `masters` masters and `replicasPerMaster` replicas
/// each, every one a ``RedisServer`` on a free loopback port (`cluster-enabled yes`, a small
/// `cluster-node-timeout`, its `nodes.conf` in its own folder), joined by
/// `redis-cli --cluster create … --cluster-replicas N --cluster-yes` and waited for until
/// ``waitUntilHealthy(timeout:)``; every node is killed when the value goes.
///
/// With `tls`, each node also listens with TLS (``RedisServer/tlsPort``) and speaks TLS on the
/// cluster bus and to its master (`tls-cluster yes`, `tls-replication yes`): Redis then
/// announces the TLS ports to TLS clients (``tlsURL``) and the plain ones to plain clients, so
/// the harness keeps driving every node over its plain port.
public final class RedisClusterNodes: @unchecked Sendable {
    /// Every node, masters first as created (a failover swaps roles: ask ``masterPorts()``).
    public let nodes: [RedisServer]
    /// `cluster-node-timeout` in milliseconds: a master down this long is failed over.
    public let nodeTimeoutMilliseconds: Int

    /// `redis+cluster://127.0.0.1:PORT,…` naming every node as a seed.
    public var url: String { "redis+cluster://" + nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") }

    /// `rediss+cluster://127.0.0.1:TLSPORT,…` naming every node's TLS port as a seed (nil without TLS).
    public var tlsURL: String? {
        let ports = nodes.compactMap(\.tlsPort)
        return ports.count == nodes.count ? "rediss+cluster://" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",") : nil
    }

    /// Starts `masters` × (1 + `replicasPerMaster`) nodes (with TLS listeners when `tls` is
    /// given), creates the cluster and waits until it is healthy. With `writesNeedAReplica`
    /// a master takes writes only while a replica acknowledged it within the last second
    /// (`min-replicas-to-write 1`, `min-replicas-max-lag 1`: docs/cluster.md's recipe), so a
    /// failover cannot lose more than about a second of acknowledged writes, and a master
    /// stopped past its failover refuses writes when it wakes instead of taking them.
    public init(masters: Int = 3, replicasPerMaster: Int = 1, tls: RedisServer.TLS? = nil, nodeTimeoutMilliseconds: Int = 1000,
                writesNeedAReplica: Bool = false, startTimeout: TimeInterval = 60) throws {
        self.nodeTimeoutMilliseconds = nodeTimeoutMilliseconds
        let arguments = [
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", String(nodeTimeoutMilliseconds),
            // A replica may always take over, however long since it heard from its master.
            "--cluster-replica-validity-factor", "0",
        ] + (writesNeedAReplica ? ["--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"] : [])
        // The bus port on a free port of its own (by default it is the port + 10000, which
        // does not exist for a free port above 55535).
        nodes = try (0..<(masters * (1 + replicasPerMaster))).map { _ in
            let busPort = try RedisServer.freeLoopbackPort()
            let own = arguments + ["--cluster-port", String(busPort)]
            guard let tls else { return try RedisServer(arguments: own) }
            return try RedisServer(tls: tls, arguments: own + ["--tls-cluster", "yes", "--tls-replication", "yes"])
        }
        let create = try Self.cli(["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
            + ["--cluster-replicas", String(replicasPerMaster), "--cluster-yes"], timeout: startTimeout)
        guard create.contains("[OK] All 16384 slots covered") else {
            throw TestSupportError("redis-cli --cluster create failed:\n\(create)")
        }
        try waitUntilHealthy(timeout: startTimeout)
    }

    /// Runs `redis-cli` with `arguments` (e.g. `["-p", "7000", "CLUSTER", "INFO"]`), waiting at
    /// most `timeout`; its output, or an error when it failed or hung.
    public static func cli(_ arguments: [String], timeout: TimeInterval = 5) throws -> String {
        let process = try ChildProcess(executable: "/usr/bin/redis-cli", arguments: arguments, directory: NSTemporaryDirectory())
        guard let status = process.waitForExit(timeout: timeout) else {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
            throw TestSupportError("redis-cli \(arguments.joined(separator: " ")) took longer than \(timeout) s")
        }
        _ = process.output.waitForEOF(timeout: 5)
        guard status == 0 else {
            throw TestSupportError("redis-cli \(arguments.joined(separator: " ")) exited \(status): \(process.output.stderrText)")
        }
        return process.output.stdoutText
    }

    /// One command on the node at `port`; its output, trimmed.
    public func command(port: Int, _ words: [String]) throws -> String {
        try Self.cli(["-h", "127.0.0.1", "-p", String(port)] + words).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The node at `port` (its plain or its TLS port).
    public func node(port: Int) -> RedisServer? { nodes.first { $0.port == port || $0.tlsPort == port } }

    /// The node id of the node at `port` (`CLUSTER MYID`).
    public func nodeID(port: Int) throws -> String { try command(port: port, ["CLUSTER", "MYID"]) }

    /// The port of the master serving `key`'s slot, as a running node sees it now (`CLUSTER
    /// KEYSLOT`, then the slot ranges of `CLUSTER NODES`).
    public func masterPort(servingKey key: String) throws -> Int {
        for node in nodes where node.pid != nil {
            guard let slotText = try? command(port: node.port, ["CLUSTER", "KEYSLOT", key]), let slot = Int(slotText),
                  let table = try? command(port: node.port, ["CLUSTER", "NODES"]) else { continue }
            for line in table.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count > 8, fields[2].contains("master"), !fields[2].contains("fail"),
                      let colon = fields[1].lastIndex(of: ":") else { continue }
                let port = Int(fields[1][fields[1].index(after: colon)...].prefix { $0 != "@" })
                for range in fields[8...] where !range.hasPrefix("[") {
                    let bounds = range.split(separator: "-").compactMap { Int($0) }
                    guard let low = bounds.first, let port else { continue }
                    if slot >= low && slot <= (bounds.count > 1 ? bounds[1] : low) { return port }
                }
            }
        }
        throw TestSupportError("no running node names the master of \(key)'s slot")
    }

    /// The ports of the masters that serve slots, as a running node sees them now.
    public func masterPorts() throws -> [Int] {
        for node in nodes where node.pid != nil {
            guard let table = try? command(port: node.port, ["CLUSTER", "NODES"]) else { continue }
            return Self.rows(table).filter { $0.isMaster && !$0.failed && $0.hasSlots }.map(\.port).sorted()
        }
        throw TestSupportError("no node of the cluster answers")
    }

    /// Waits until a replica took over the slots of the master at `port` (killed): as many
    /// masters serve slots as before, none failed, and that one is not among them. Not just
    /// "not among the masters": a node drops a master it merely suspects (`fail?`) from
    /// ``masterPorts()`` at once, before any replica is promoted, and a master started again
    /// then keeps its slots — empty without persistence (session 47: the chaos bed and
    /// `RedisClusterTests` restarted masters that early and lost their keys). False after `timeout`.
    public func waitUntilPromoted(replacing port: Int, masters: Int, timeout: TimeInterval = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let ports = try? masterPorts(), ports.count == masters, !ports.contains(port) { return true }
            usleep(50_000)
        }
        return false
    }

    /// Waits until every running node says `cluster_state:ok`, sees the same masters (each
    /// with slots, none failed), and every running replica's link to its master is up.
    public func waitUntilHealthy(timeout: TimeInterval = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var problem = "not asked yet"
        while Date() < deadline {
            if let found = healthProblem() { problem = found } else { return }
            usleep(50_000)
        }
        throw TestSupportError("the cluster did not become healthy within \(timeout) s: \(problem)")
    }

    /// SIGKILL to every node still running (also done when the value goes).
    public func killEveryNode() {
        for node in nodes { node.kill() }
    }

    deinit { killEveryNode() }

    private func healthProblem() -> String? {
        var masterSets: Set<[Int]> = []
        for node in nodes where node.pid != nil {
            guard let info = try? command(port: node.port, ["CLUSTER", "INFO"]), info.contains("cluster_state:ok") else {
                return "127.0.0.1:\(node.port) is not cluster_state:ok"
            }
            guard let table = try? command(port: node.port, ["CLUSTER", "NODES"]) else { return "127.0.0.1:\(node.port): no CLUSTER NODES" }
            let rows = Self.rows(table)
            if let failed = rows.first(where: { $0.failed && $0.hasSlots }) { return "127.0.0.1:\(node.port) sees \(failed.port) failed" }
            masterSets.insert(rows.filter { $0.isMaster && $0.hasSlots }.map(\.port).sorted())
            if let me = rows.first(where: \.isMyself), !me.isMaster {
                guard let replication = try? command(port: node.port, ["INFO", "replication"]),
                      replication.contains("master_link_status:up")
                else { return "the replica 127.0.0.1:\(node.port) is not in sync with its master" }
            }
        }
        return masterSets.count == 1 ? nil : "the nodes disagree on the masters: \(masterSets)"
    }

    /// One line of `CLUSTER NODES`.
    private struct Row {
        let port: Int
        let flags: [Substring]
        let hasSlots: Bool
        var isMaster: Bool { flags.contains("master") }
        var isMyself: Bool { flags.contains("myself") }
        var failed: Bool { flags.contains("fail") || flags.contains("fail?") }
    }

    /// `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot>…`.
    private static func rows(_ table: String) -> [Row] {
        table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 8, let colon = fields[1].lastIndex(of: ":") else { return nil }
            let portText = fields[1][fields[1].index(after: colon)...].prefix { $0.isNumber }
            guard let port = Int(portText) else { return nil }
            return Row(port: port, flags: fields[2].split(separator: ","), hasSlots: fields.count > 8)
        }
    }
}
