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

    /// `getInfo`'s first step, on the control slot (`nodes`, `P{0}nodes`, declared): every node
    /// in `P{0}nodes`, each with 1 if it beat within `timeout` ms (live, listed), else 0. A node
    /// past that window but not yet declared dead (the reaper hands its sessions over at its
    /// next tick, later in a grace window) is not listed, but its sessions count: they are still
    /// there, and resumable once handed over (``groupSessions``).
    static let info = LuaScript("api.info", parameters: [.key("nodes"), .number("timeout")], body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local out = {}
        local all = redis.call('ZRANGE', nodes, 0, -1, 'WITHSCORES')
        for i = 1, #all, 2 do
          out[#out + 1] = all[i]
          out[#out + 1] = tonumber(all[i + 1]) >= now - timeout and 1 or 0
        end
        return out
        """)

    /// `getInfo`'s second step, one call per key group (`held`, its `P{<g>}held`, declared): the
    /// sessions each node named (the rest) has in the group (`P{<g>}ns:<node>`), in order, the
    /// group's held sessions no node has (their node stopped), and its channels with members
    /// (`ZCARD P{<g>}channels`).
    static let groupSessions = LuaScript("api.groupSessions", parameters: [.key("held")], rest: "nodes", body: """
        local tag = string.sub(held, 1, #held - #'held')
        local counts = {}
        for i = nodes, #ARGV do counts[#counts + 1] = redis.call('SCARD', tag .. 'ns:' .. ARGV[i]) end
        local orphans = 0
        for _, id in ipairs(redis.call('ZRANGE', held, 0, -1)) do
          if redis.call('HGET', tag .. 's:' .. id, 'node') == '' then orphans = orphans + 1 end
        end
        return {counts, orphans, redis.call('ZCARD', tag .. 'channels')}
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
