import RollcallCore

/// The Lua scripts the server API needs in cluster mode (PROTOCOL §10): listings of the
/// whole cluster. Each script's first parameter is `prefix`, `cluster.keyPrefix`, but for
/// `api.channels`, which reads one key group's bucket and is run for every group.
enum ServerAPIScripts {
    /// `getChannels` in one key group: the channels of its bucket (`channels`, `P{<g>}channels`)
    /// whose name starts with a prefix, message before stream, byte order, after a cursor
    /// (`after`: `m<name>`/`s<name>`, or ''), at most `limit`; the node merges every group's
    /// pages (``ClusterPresence/getChannelsInCluster(_:then:)``). A channel's keys carry its
    /// group's tag, the bucket's. Returns flat (entry, occupancy, mode, seq) and whether more
    /// follow in this group.
    static let channels = LuaScript("api.channels", parameters: [.key("channels"), .text("after"), .text("namePrefix"), .number("limit")],
                                    library: LuaScript.lessBytes, body: """
        local group = string.sub(channels, 1, #channels - #'channels')
        local out, more = {}, 0
        for _, t in ipairs({'m', 's'}) do
          local low, high = t .. namePrefix, t .. namePrefix .. '\\255'
          local min = '[' .. low
          if after ~= '' and not lessBytes(after, low) then min = '(' .. after end
          if after == '' or lessBytes(after, high) then
            local entries = redis.call('ZRANGEBYLEX', channels, min, '(' .. high, 'LIMIT', 0, limit + 1 - #out / 4)
            for _, entry in ipairs(entries) do
              if #out / 4 >= limit then more = 1; break end
              local name = string.sub(entry, 2)
              local base = group .. 'c:' .. t .. ':' .. #name .. ':' .. name
              out[#out + 1] = entry
              out[#out + 1] = redis.call('ZCARD', base .. ':m')
              out[#out + 1] = redis.call('HGET', base, 'mode') or 'announce'
              out[#out + 1] = tonumber(redis.call('HGET', base, 'seq') or '0')
            end
          end
          if more == 1 then break end
        end
        return {out, more}
        """)

    /// `getInfo`: live nodes with their session counts and every session (live and held; the
    /// channels with members are counted per key group apart: `ZCARD P{<g>}channels`); a node is live when it beat within `timeout` ms. A node past that
    /// window but not yet declared dead (still in `P nodes`: the reaper hands its sessions
    /// over at its next tick, later in a grace window) is not listed, but its sessions count:
    /// they are still there, and resumable once handed over. Held sessions with no node are
    /// counted from the `held` buckets of every one of the `groups` key groups.
    static let info = LuaScript("api.info", parameters: [.text("prefix"), .number("timeout"), .number("groups")], body: """
        \(ClusterKeys.luaControlTag)
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local nodes, total = {}, 0
        local all = redis.call('ZRANGE', control .. 'nodes', 0, -1, 'WITHSCORES')
        for i = 1, #all, 2 do
          local node, beat = all[i], tonumber(all[i + 1])
          local count = redis.call('SCARD', control .. 'ns:' .. node)
          if beat >= now - timeout then
            nodes[#nodes + 1] = node
            nodes[#nodes + 1] = count
          end
          total = total + count
        end
        -- Held sessions no node has (their node stopped) count too.
        for group = 0, groups - 1 do
          local tag = prefix .. '{' .. group .. '}'
          for _, id in ipairs(redis.call('ZRANGE', tag .. 'held', 0, -1)) do
            if redis.call('HGET', tag .. 's:' .. id, 'node') == '' then total = total + 1 end
          end
        end
        return {nodes, total}
        """)

    /// `disconnectUser`: the user's sessions (`sessions`, its `P{<g>}us:<n>:<user>`), each with
    /// its node ('' while held with no node). One user: one slot.
    static let sessionsOfUser = LuaScript("api.sessionsOfUser", parameters: [.key("sessions"), .text("user")], body: """
        local out = {}
        local tag = string.sub(sessions, 1, #sessions - #('us:' .. #user .. ':' .. user))
        for _, id in ipairs(redis.call('ZRANGE', sessions, 0, -1)) do
          out[#out + 1] = id
          out[#out + 1] = redis.call('HGET', tag .. 's:' .. id, 'node') or ''
        end
        return out
        """)
}
