/// The messages a channel keeps for its held members (PROTOCOL §5; docs/cluster.md, "Kept
/// messages"), in the channel's own slot: a publish runs there and cannot write a held
/// session's user slot on Redis Cluster. Per channel `P{g}c:<id>` and held session `s`:
/// - `…:k:<s>`: a list of entries `<Redis ms> <order>\n<encoded event>`, oldest first. The
///   order is a counter of the channel's key group (`P{g}kq`): with one group it orders every
///   kept message of the cluster, with more the Redis time orders them across groups;
/// - `…:kb` (session → bytes of the events kept, at most `heldMessageBytes`) and `…:kd`
///   (session → how many did not fit);
/// - `…:kc:<s>`: what the last claim took (`<claim> <dropped>`, then the entries), for ten node
///   timeouts, so a claim made void (`session.cancelClaim`) can put them back.
///
/// The node that resumes the session merges the channels' lists with what its old node heard
/// before the hold (``KeptMessages``) and applies `heldMessageBytes` across them.
enum KeptMessageScripts {
    /// Lua: `keepMessage`, `takeKept`, `restoreKept`, `forgetKept`. Uses only `redis`.
    static let library = """
        -- A `message` event for the held session `s` of the channel `base`, `order` its entry's
        -- head: kept while the session's events kept here fit in `limit` bytes, else counted.
        local function keepMessage(base, s, head, payload, limit)
          local used = tonumber(redis.call('HGET', base .. ':kb', s) or '0')
          if used + #payload <= limit then
            redis.call('RPUSH', base .. ':k:' .. s, head .. payload)
            redis.call('HINCRBY', base .. ':kb', s, #payload)
          else
            redis.call('HINCRBY', base .. ':kd', s, 1)
          end
        end

        -- A claim (`claim`: its new token's hash) takes what the channel kept for `s`: answers
        -- the entries and how many were dropped, and keeps both in `:kc:` for `markMs`.
        local function takeKept(base, s, claim, markMs)
          local list, handed = base .. ':k:' .. s, base .. ':kc:' .. s
          local entries = redis.call('LRANGE', list, 0, -1)
          local dropped = tonumber(redis.call('HGET', base .. ':kd', s) or '0')
          redis.call('DEL', handed)
          redis.call('HDEL', base .. ':kb', s)
          redis.call('HDEL', base .. ':kd', s)
          if #entries > 0 then redis.call('RENAME', list, handed) end
          if #entries > 0 or dropped > 0 then
            redis.call('LPUSH', handed, claim .. ' ' .. dropped)
            redis.call('PEXPIRE', handed, markMs)
          end
          return entries, dropped
        end

        -- The claim `claim` was made void: what it took goes back ahead of what was kept since
        -- (only its own take: an older claim's that is still there is not put back).
        local function restoreKept(base, s, claim)
          local handed = base .. ':kc:' .. s
          local first = redis.call('LINDEX', handed, 0)
          if not first then return end
          local space = string.find(first, ' ', 1, true)
          if not space or string.sub(first, 1, space - 1) ~= claim then return end
          local entries = redis.call('LRANGE', handed, 1, -1)
          redis.call('DEL', handed)
          local list = base .. ':k:' .. s
          for i = #entries, 1, -1 do redis.call('LPUSH', list, entries[i]) end
          local bytes = 0
          for _, entry in ipairs(redis.call('LRANGE', list, 0, -1)) do
            bytes = bytes + #entry - (string.find(entry, '\\n', 1, true) or 0)
          end
          if bytes > 0 then redis.call('HSET', base .. ':kb', s, bytes) end
          local dropped = tonumber(string.sub(first, space + 1)) or 0
          if dropped > 0 then redis.call('HINCRBY', base .. ':kd', s, dropped) end
        end

        -- The session left the channel (its end's leave, or its own): nothing kept here for it.
        local function forgetKept(base, s)
          redis.call('DEL', base .. ':k:' .. s, base .. ':kc:' .. s)
          redis.call('HDEL', base .. ':kb', s)
          redis.call('HDEL', base .. ':kd', s)
        end

        """
}
