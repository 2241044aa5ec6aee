import Foundation

/// Each op's own floor (issue 30 item 4): one Lua script of the Redis commands that a cluster
/// `publish`, `setState` or `join` cannot do without while keeping PROTOCOL 1.2's guarantees on
/// one Redis (every guarantee below is one the broker's own script keeps today), and nothing
/// else: no library of functions, no webhook check, no TTL deadlines, no retry paths. Run on the
/// floor's channel (`KEYS[1]`, filled by ``fill(_:members:_:)``) and published to the floor's
/// pub/sub channel (`KEYS[2]`, one node subscribed), with as many arguments and bytes as the op
/// passes (``realArguments``), so that what an op costs above this floor is what its script
/// does beyond the commands (Lua, branches, the library) or what its design adds.
enum OpFloorScripts {
    /// A member's publish: only a member publishes (`HGET :st`); the `recipients` it answers
    /// (`HGET ml`, the session's own flags `HGET :s`); a publish retried after `UNAVAILABLE` is
    /// not delivered twice (the session's last token: `HGET` and `HSET :lp`); held sessions
    /// keep it for their resume (`SMEMBERS :hm`); messages numbered per channel (`HINCRBY mq`);
    /// delivery (`PUBLISH`). 8 commands.
    static let publish = """
        local c = KEYS[1]
        if not redis.call('HGET', c .. ':st', ARGV[1]) then return {'notmember'} end
        local live = tonumber(redis.call('HGET', c, 'ml') or '0')
        redis.call('HGET', c .. ':s', ARGV[2])
        redis.call('HGET', c .. ':lp', ARGV[2])
        redis.call('HSET', c .. ':lp', ARGV[2], ARGV[3])
        redis.call('SMEMBERS', c .. ':hm')
        redis.call('HINCRBY', c, 'mq', 1)
        redis.call('PUBLISH', KEYS[2], ARGV[4])
        return {'ok', live}
        """

    /// A member's state change: fencing (the session's owner, `HGET :o`); compare and set
    /// (`HGET`, `HSET :st`); the event's occupancy and mode (`ZCARD :m`, `HGET mode`), its `seq`
    /// (`HINCRBY`) and its timestamp from one clock (`TIME`); delivery (`PUBLISH`). 8 commands.
    static let setState = """
        local c = KEYS[1]
        redis.call('HGET', c .. ':o', ARGV[2])
        if not redis.call('HGET', c .. ':st', ARGV[1]) then return {'notmember'} end
        redis.call('HSET', c .. ':st', ARGV[1], ARGV[3])
        local occupancy = redis.call('ZCARD', c .. ':m')
        redis.call('HGET', c, 'mode')
        local seq = redis.call('HINCRBY', c, 'seq', 1)
        redis.call('TIME')
        redis.call('PUBLISH', KEYS[2], ARGV[4])
        return {'ok', occupancy, seq}
        """

    /// A join with presence and messages into an announce-mode channel: fencing (`HGET :o`,
    /// then the session's copy `HSET :o`); the member's state (`HGET`, `HSET :st`); the session's
    /// flags and the live message count (`HSET :s`, `HINCRBY ml`); sessions per user (`HINCRBY
    /// :n`); the member set and the roster as of the last event (`ZADD :m`, `ZADD :lm`); the
    /// indexes of `getChannels`, `getUserChannels` and the session's channels for a resume
    /// (`ZADD`, `ZADD`, `SADD`); the event (`ZCARD`, `HGET mode`, `HINCRBY seq`, `TIME`,
    /// `PUBLISH`); the joiner's snapshot (`ZRANGEBYLEX`, `HMGET` of states and infos). 20
    /// commands.
    static let join = """
        local c, user, session = KEYS[1], ARGV[1], ARGV[2]
        redis.call('HGET', c .. ':o', session)
        redis.call('HGET', c .. ':st', user)
        redis.call('HSET', c .. ':s', session, 'pm')
        redis.call('HSET', c .. ':o', session, 'floor-node')
        redis.call('HINCRBY', c, 'ml', 1)
        redis.call('HINCRBY', c .. ':n', user, 1)
        redis.call('ZADD', c .. ':m', 0, user)
        redis.call('HSET', c .. ':st', user, ARGV[3])
        redis.call('ZADD', c .. ':lm', 0, user)
        redis.call('ZADD', c .. ':channels', 0, 'mfloor')
        redis.call('ZADD', c .. ':uc', 0, 'mfloor')
        redis.call('SADD', c .. ':sc', 'floor')
        local occupancy = redis.call('ZCARD', c .. ':m')
        redis.call('HGET', c, 'mode')
        local seq = redis.call('HINCRBY', c, 'seq', 1)
        redis.call('TIME')
        redis.call('PUBLISH', KEYS[2], ARGV[4])
        local users = redis.call('ZRANGEBYLEX', c .. ':m', '-', '+', 'LIMIT', 0, 256)
        local states = redis.call('HMGET', c .. ':st', unpack(users))
        local infos = redis.call('HMGET', c .. ':info', unpack(users))
        return {'ok', occupancy, seq, users, states, infos}
        """

    /// The user and session every floor script acts for.
    static let user = "floor-user", session = "floor-session"

    /// What a real op passes after its script's SHA-1 (the key count, keys and arguments), as
    /// `MONITOR` showed at 4a39990 for a joiner, then member, of a 10-member channel
    /// (Benchmarks/tools/join-script-parts.py's capture): how many, and their bytes.
    static let realArguments: [CostFloorRun.Kind: (count: Int, bytes: Int)] = [
        .joinCommands: (34, 566), .setStateCommands: (26, 305), .publishCommands: (20, 353),
    ]

    /// The floor channel `channel` with `members` members and the floor's user, each with a
    /// state and an info.
    static func fill(_ channel: String, members: Int, _ pipe: RedisPipe) throws {
        let users = (0..<members).map { String(format: "member-%02d", $0) } + [user]
        var commands: [[[UInt8]]] = [[Array("DEL".utf8)] + ["", ":m", ":lm", ":st", ":info", ":s", ":o", ":n", ":lp", ":hm"].map { Array((channel + $0).utf8) }]
        for name in users {
            commands.append(["ZADD", channel + ":m", "0", name].map { Array($0.utf8) })
            commands.append(["HSET", channel + ":st", name, "{\"mood\":\"calm\"}"].map { Array($0.utf8) })
            commands.append(["HSET", channel + ":info", name, "{\"name\":\"\(name)\"}"].map { Array($0.utf8) })
        }
        commands.append(["HSET", channel, "mode", "announce", "seq", "1", "ml", "1"].map { Array($0.utf8) })
        for reply in try pipe.call(commands) {
            if case .error(let message) = reply { throw StormError("floor: filling \(channel) failed: \(message)") }
        }
    }

    /// `ARGV` for `kind`: the user, the session, a state (or a publish's token), the pub/sub
    /// payload, then padding up to the real op's count and bytes (``realArguments``; the key
    /// count and the two keys are counted as part of them).
    static func arguments(for kind: CostFloorRun.Kind, channel: String, events: String, payload: [UInt8]) -> [[UInt8]] {
        let stateOrToken = kind == .publishCommands ? "f1a2b3c4d5e6f708" : "{\"mood\":\"busy\"}"
        var arguments = [Array(user.utf8), Array(session.utf8), Array(stateOrToken.utf8), payload]
        guard let real = realArguments[kind] else { return arguments }
        let used = ["2", channel, events].reduce(0) { $0 + $1.utf8.count } + arguments.reduce(0) { $0 + $1.count }
        let padding = max(0, real.count - 3 - arguments.count)
        guard padding > 0 else { return arguments }
        let each = max(1, (real.bytes - used) / padding)
        arguments += Array(repeating: [UInt8](repeating: UInt8(ascii: "p"), count: each), count: padding)
        return arguments
    }
}
