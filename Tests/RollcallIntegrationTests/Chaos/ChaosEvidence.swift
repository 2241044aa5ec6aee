import Foundation
import RollcallRedisEngine

/// What Redis holds about a user and the run's channels, read behind the nodes' backs
/// (white-box, through `redis-cli`) for a violation's report: the user's sessions with their
/// fields, joined channels, hold and pending end; and per channel the `seq`, mode, next
/// interval flush and the user's entries in the member, listed, count and pending keys
/// (docs/cluster.md, "Keys"). Tokens are left out.
enum ChaosEvidence {
    /// The user's sessions, in its key group's slot (`KEYS[1]`: its `us:` key; ARGV: the
    /// group's tag, the user).
    private static let userScript = """
        local G, U = ARGV[1], ARGV[2]
        local function lp(s) return #s .. ':' .. s end
        local out = {}
        table.insert(out, 'uc [' .. table.concat(redis.call('ZRANGE', G .. 'uc:' .. lp(U), 0, -1), ' ') .. ']')
        for _, s in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
          local h = redis.call('HGETALL', G .. 's:' .. s)
          local fields = {}
          for i = 1, #h, 2 do if not string.find(h[i], 'tok') then table.insert(fields, h[i] .. '=' .. h[i + 1]) end end
          table.insert(out, 'session ' .. s .. ' {' .. table.concat(fields, ' ') .. '} sc [' ..
            table.concat(redis.call('SMEMBERS', G .. 'sc:' .. s), ' ') .. '] held=' .. tostring(redis.call('ZSCORE', G .. 'held', s)) ..
            ' ending=' .. tostring(redis.call('ZSCORE', G .. 'ending', s)))
        end
        local t = redis.call('TIME')
        table.insert(out, 'redis time ' .. t[1] .. string.format('%03d', math.floor(t[2] / 1000)))
        return table.concat(out, '\\n')
        """

    /// One channel, in its slot (`KEYS[1]`: its base key; ARGV: the group's tag, the channel's
    /// name, the user).
    private static let channelScript = """
        local c, G, name, U = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
        local h = redis.call('HMGET', c, 'seq', 'mode', 'due')
        return '#' .. name .. ' seq=' .. tostring(h[1]) .. ' mode=' .. tostring(h[2]) .. ' due=' .. tostring(h[3]) ..
          ' in :m=' .. tostring(redis.call('ZSCORE', c .. ':m', U) ~= false) .. ' in :lm=' .. tostring(redis.call('ZSCORE', c .. ':lm', U) ~= false) ..
          ' :n=' .. tostring(redis.call('HGET', c .. ':n', U)) .. ' :pend=' .. tostring(redis.call('HGET', c .. ':pend', U)) ..
          ' P due=' .. tostring(redis.call('ZSCORE', G .. 'due', 'm:' .. #name .. ':' .. name))
        """

    /// The dump for `user` over `channels`, or why it could not be read. `groups`: the key
    /// groups the cluster runs with (1024 on a Redis Cluster); each read goes to the master of
    /// its slot (`redis-cli -c` follows `MOVED`).
    static func dump(redisPort: Int, keyPrefix: String, groups: KeyGroups, user: String, channels: [String]) -> String {
        guard let cli = ExternalCommand.which("redis-cli") else { return "(redis-cli not found)" }
        func tag(_ id: String) -> String { keyPrefix + "{\(groups.group(of: id))}" }
        func run(_ script: String, key: String, _ arguments: [String]) -> String {
            do {
                let result = try ExternalCommand.run(cli, ["-c", "-p", String(redisPort), "--raw", "EVAL", script, "1", key] + arguments, timeout: 10)
                return result.status == 0 ? result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : "(redis-cli: \(result.stderr))"
            } catch {
                return "(redis-cli: \(error))"
            }
        }
        let userTag = tag("u:\(user.utf8.count):\(user)")
        var lines = [run(userScript, key: userTag + "us:\(user.utf8.count):\(user)", [userTag, user])]
        for channel in channels {
            let id = "m:\(channel.utf8.count):\(channel)"
            lines.append(run(channelScript, key: tag("c:" + id) + "c:" + id, [tag("c:" + id), channel, user]))
        }
        return lines.joined(separator: "\n")
    }
}
