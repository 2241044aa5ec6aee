import Foundation

/// What Redis holds about a user and the run's channels, read behind the nodes' backs
/// (white-box, through `redis-cli`) for a violation's report: the user's sessions with their
/// fields, joined channels, hold and pending end; and per channel the `seq`, mode, next
/// interval flush and the user's entries in the member, listed, count and pending keys
/// (docs/cluster.md, "Keys"). Tokens are left out.
enum ChaosEvidence {
    private static let script = """
        local P, U = ARGV[1], ARGV[2]
        -- The user's keys and its group's buckets: the chaos runs have one key group.
        local G = P .. '{0}'
        local function lp(s) return #s .. ':' .. s end
        local out = {}
        table.insert(out, 'uc [' .. table.concat(redis.call('ZRANGE', G .. 'uc:' .. lp(U), 0, -1), ' ') .. ']')
        for _, s in ipairs(redis.call('ZRANGE', G .. 'us:' .. lp(U), 0, -1)) do
          local h = redis.call('HGETALL', G .. 's:' .. s)
          local fields = {}
          for i = 1, #h, 2 do if not string.find(h[i], 'tok') then table.insert(fields, h[i] .. '=' .. h[i + 1]) end end
          table.insert(out, 'session ' .. s .. ' {' .. table.concat(fields, ' ') .. '} sc [' ..
            table.concat(redis.call('SMEMBERS', G .. 'sc:' .. s), ' ') .. '] held=' .. tostring(redis.call('ZSCORE', G .. 'held', s)) ..
            ' ending=' .. tostring(redis.call('ZSCORE', G .. 'ending', s)))
        end
        for i = 3, #ARGV do
          local c = P .. '{0}c:m:' .. lp(ARGV[i])
          local h = redis.call('HMGET', c, 'seq', 'mode', 'due')
          table.insert(out, '#' .. ARGV[i] .. ' seq=' .. tostring(h[1]) .. ' mode=' .. tostring(h[2]) .. ' due=' .. tostring(h[3]) ..
            ' in :m=' .. tostring(redis.call('ZSCORE', c .. ':m', U) ~= false) .. ' in :lm=' .. tostring(redis.call('ZSCORE', c .. ':lm', U) ~= false) ..
            ' :n=' .. tostring(redis.call('HGET', c .. ':n', U)) .. ' :pend=' .. tostring(redis.call('HGET', c .. ':pend', U)) ..
            ' P due=' .. tostring(redis.call('ZSCORE', P .. '{0}due', 'm:' .. lp(ARGV[i]))))
        end
        local t = redis.call('TIME')
        table.insert(out, 'redis time ' .. t[1] .. string.format('%03d', math.floor(t[2] / 1000)))
        return table.concat(out, '\\n')
        """

    /// The dump for `user` over `channels`, or why it could not be read.
    static func dump(redisPort: Int, keyPrefix: String, user: String, channels: [String]) -> String {
        guard let cli = ExternalCommand.which("redis-cli") else { return "(redis-cli not found)" }
        do {
            let result = try ExternalCommand.run(cli, ["-p", String(redisPort), "--raw", "EVAL", script, "0", keyPrefix, user] + channels,
                                                 timeout: 10)
            return result.status == 0 ? result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : "(redis-cli: \(result.stderr))"
        } catch {
            return "(redis-cli: \(error))"
        }
    }
}
