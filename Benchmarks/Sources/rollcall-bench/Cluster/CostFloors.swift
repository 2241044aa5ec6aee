import Foundation
import RollcallProtocol

/// What one floor batch cost: Redis CPU per command, and the CPU of the nodes per command
/// (the one node subscribed to the floor's channel parses every message it gets).
struct CostFloor: Codable {
    /// e.g. `3 nodes + Redis`.
    let setup: String
    /// ``CostFloorRun/Kind`` raw value.
    let kind: String
    let ops: Int
    let seconds: Double
    /// redis-server CPU seconds (schedstat), idle cost removed.
    let redisCPU: Double
    /// CPU seconds of every node added up (schedstat), idle cost removed.
    let nodeCPU: Double
    /// Calls of the batch's command in `INFO commandstats` (`evalsha` or `publish`): one per op
    /// when nothing else ran.
    let calls: Int

    var redisMicrosPerOp: Double { redisCPU * 1e6 / Double(max(1, ops)) }
    var nodeMicrosPerOp: Double { nodeCPU * 1e6 / Double(max(1, ops)) }
}

/// The floors of the cost batches (issue 30 item 4), measured against the same Redis and nodes
/// as the batches, with the same method (`CONFIG RESETSTAT`, a known number of commands,
/// schedstat of redis-server and of the nodes, the idle cost of the same seconds subtracted):
/// what Redis and a node cannot do an op for less than. The commands come from a connection of
/// the bench's own, `batch` at a time in one write (`rounds` times), as the cost batches'
/// 300 sessions send their requests.
struct CostFloorRun {
    /// One floor.
    enum Kind: String, CaseIterable, Codable {
        /// `EVALSHA` of `return 1`: a script call and nothing in it.
        case emptyScript
        /// `EVALSHA` of what every presence script must do: one `TIME`, one `HGET`.
        case timeAndRead
        /// A bare `PUBLISH` of the publish batch's pub/sub payload to a channel one node
        /// subscribes to; that node parses each message and delivers it to nobody.
        case publish
        /// One script that does all three: `TIME`, `HGET`, `PUBLISH` (one subscribed node).
        case minimalPresenceScript
        /// One script of the commands a cluster `publish` cannot do without, given PROTOCOL 1.2's
        /// guarantees (``OpFloorScripts/publish``), called with as many arguments and bytes as a
        /// real publish passes.
        case publishCommands
        /// The same for `setState` (``OpFloorScripts/setState``).
        case setStateCommands
        /// The same for `join` into a 10-member channel (``OpFloorScripts/join``).
        case joinCommands

        /// The name in the tables.
        var label: String {
            switch self {
            case .emptyScript: "EVALSHA `return 1`"
            case .timeAndRead: "EVALSHA TIME + HGET"
            case .publish: "PUBLISH to 1 subscribed node (node parses, delivers to nobody)"
            case .minimalPresenceScript: "EVALSHA TIME + HGET + PUBLISH (1 subscribed node)"
            case .publishCommands: "EVALSHA of the commands a publish needs (8, 1 subscribed node)"
            case .setStateCommands: "EVALSHA of the commands a setState needs (8, 1 subscribed node)"
            case .joinCommands: "EVALSHA of the commands a join needs (20, 1 subscribed node)"
            }
        }

        /// The op whose own floor this is, nil for the floors every op shares.
        var op: String? {
            switch self {
            case .publishCommands: "publish"
            case .setStateCommands: "setState"
            case .joinCommands: "join"
            default: nil
            }
        }

        /// The command the batch counts in `INFO commandstats`.
        var counted: String { self == .publish ? "publish" : "evalsha" }
    }

    let group: NodeGroup
    let redis: RedisServerProcess
    let setup: String
    let rounds: Int
    let batch: Int

    /// The message channel the floor's one listener joins (a `message` channel named `floor`).
    static let channel = "floor"
    /// Its pub/sub channel, as docs/cluster.md "Keys" names it: `P{<group>}e:<t>:<n>:<name>` (one group on one Redis).
    static var events: String { NodeGroup.keyPrefix + "{0}e:m:\(channel.utf8.count):\(channel)" }

    func measure() throws -> [CostFloor] {
        let pipe = try RedisPipe(port: redis.port)
        // The listener: one session on the first node, in the channel with presence and messages
        // off, so that the node subscribes to its events and delivers each message to nobody.
        let listener = try SpreadSessions(urls: [group.urls[0]], count: 1, label: "floor \(setup)", userId: { _ in "floor-listener" })
        defer { listener.shutdown() }
        let joined = listener.requestAll("join", [0], timeout: 10) { _ in
            ["channel": .string(Self.channel), "presence": false, "messages": false]
        }
        guard joined.ok == 1 else { throw StormError("floor \(setup): the listener's join failed") }
        let deadline = MonotonicSeconds.now + 5
        while try subscribers(pipe) != 1 {
            guard MonotonicSeconds.now < deadline else { throw StormError("floor \(setup): no node subscribed to \(Self.events)") }
            usleep(20_000)
        }
        let hash = NodeGroup.keyPrefix + "floor:hash"
        _ = try pipe.call("HSET", hash, "seq", "1")
        // The pub/sub payload of a publish batch's op: a message event of 100 bytes, framed as
        // the publish script frames it (`M<session>\n<kept>\n<event>`), from a session that is
        // not the listener's.
        let message = String(repeating: "m", count: 100)
        let event = "{\"event\":\"message\",\"channel\":\"\(Self.channel)\",\"channelType\":\"message\",\"publisher\":\"floor-publisher\","
            + "\"message\":\"\(message)\",\"timestamp\":1700000000000}"
        let payload = Array("Mfloor-publisher\n\n\(event)".utf8)
        let empty = try load(pipe, "return 1")
        let timeAndRead = try load(pipe, "redis.call('TIME') return redis.call('HGET', KEYS[1], 'seq')")
        let minimal = try load(pipe, "redis.call('TIME') redis.call('HGET', KEYS[1], 'seq') return redis.call('PUBLISH', KEYS[2], ARGV[1])")
        let opChannel = NodeGroup.keyPrefix + "floor:c"
        try OpFloorScripts.fill(opChannel, members: 10, pipe)
        let opScripts: [Kind: String] = [.publishCommands: try load(pipe, OpFloorScripts.publish),
                                         .setStateCommands: try load(pipe, OpFloorScripts.setState),
                                         .joinCommands: try load(pipe, OpFloorScripts.join)]
        let idle = IdleRates.measure(group, redis, seconds: 1)
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        return try Kind.allCases.map { kind in
            let command: [[UInt8]]
            switch kind {
            case .emptyScript: command = [bytes("EVALSHA"), bytes(empty), bytes("0")]
            case .timeAndRead: command = [bytes("EVALSHA"), bytes(timeAndRead), bytes("1"), bytes(hash)]
            case .publish: command = [bytes("PUBLISH"), bytes(Self.events), payload]
            case .minimalPresenceScript:
                command = [bytes("EVALSHA"), bytes(minimal), bytes("2"), bytes(hash), bytes(Self.events), payload]
            case .publishCommands, .setStateCommands, .joinCommands:
                command = [bytes("EVALSHA"), bytes(opScripts[kind]!), bytes("2"), bytes(opChannel), bytes(Self.events)]
                    + OpFloorScripts.arguments(for: kind, channel: opChannel, events: Self.events, payload: payload)
            }
            return try run(kind, command, pipe, idle)
        }
    }

    /// `PUBSUB NUMSUB` of the floor's channel.
    private func subscribers(_ pipe: RedisPipe) throws -> Int {
        guard case .array(let pair?) = try pipe.call("PUBSUB", "NUMSUB", Self.events), pair.count == 2,
              case .integer(let count) = pair[1] else { return 0 }
        return count
    }

    /// `SCRIPT LOAD`: the script's SHA-1.
    private func load(_ pipe: RedisPipe, _ script: String) throws -> String {
        guard let sha = try pipe.call("SCRIPT", "LOAD", script).text else { throw StormError("floor \(setup): SCRIPT LOAD failed") }
        return sha
    }

    /// `rounds` writes of `batch` copies of `command`, each waiting for its replies; then until
    /// the nodes are done with the messages. CPU and the counted command around the whole batch.
    private func run(_ kind: Kind, _ command: [[UInt8]], _ pipe: RedisPipe, _ idle: IdleRates) throws -> CostFloor {
        redis.command(["CONFIG", "RESETSTAT"])
        let node0 = group.cpuSeconds, redis0 = redis.cpuSeconds, start = MonotonicSeconds.now
        let commands = [[[UInt8]]](repeating: command, count: batch)
        for _ in 0..<rounds {
            let replies = try pipe.call(commands)
            if let failure = replies.first(where: { if case .error = $0 { true } else { false } }) {
                throw StormError("floor \(setup) \(kind.rawValue): \(failure)")
            }
        }
        waitNodesIdle(idle)
        let elapsed = MonotonicSeconds.now - start
        let stats = CommandStats(info: redis.command(["INFO", "commandstats"]) ?? "")
        let ops = rounds * batch
        let floor = CostFloor(setup: setup, kind: kind.rawValue, ops: ops, seconds: elapsed,
                              redisCPU: redis.cpuSeconds - redis0 - idle.redis * elapsed,
                              nodeCPU: group.cpuSeconds - node0 - idle.broker * elapsed,
                              calls: Int((Double(stats[kind.counted].calls) - idle.calls(kind.counted, over: elapsed)).rounded()))
        print("cluster: floor \(setup) \(kind.label): \(ops) ops in \(BenchMetric.format(elapsed)) s; "
              + "redis \(BenchMetric.format(floor.redisMicrosPerOp)) µs/op, nodes \(BenchMetric.format(floor.nodeMicrosPerOp)) µs/op")
        return floor
    }

    /// Waits (at most 2 s) until the nodes spend no more than twice their idle rate over 100 ms:
    /// a node reads its pub/sub messages after Redis has answered the bench.
    private func waitNodesIdle(_ idle: IdleRates) {
        let deadline = MonotonicSeconds.now + 2
        var last = group.cpuSeconds
        while MonotonicSeconds.now < deadline {
            usleep(100_000)
            let now = group.cpuSeconds
            if now - last <= max(2 * idle.broker * 0.1, 0.001) { return }
            last = now
        }
    }
}
