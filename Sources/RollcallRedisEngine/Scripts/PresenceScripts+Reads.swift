import RollcallCore

/// The presence scripts that read: listings, snapshots and the state-key expiries a node
/// runs (the scripts that change presence are in ``PresenceScripts``).
extension PresenceScripts {
    /// `getOnlineUsers`: a page of the roster as of the channel's last event (`:lm`), states
    /// and infos as of that event (from `:pend` / `:pinfo` for users changed since), plus the
    /// reader's current state and info when it joined since (else ''). A channel without
    /// `:lm` (created before it existed) is listed as its members now.
    static let onlineUsers = LuaScript("presence.onlineUsers", parameters: Channel.parameters + [
        .text("after"), .number("pageSize"), .text("includeState"), .text("includeUserId"), .text("viewer"),
    ], library: library, body: """
        local seq = tonumber(redis.call('HGET', ch.base, 'seq') or '0')
        local listed = ch.listed
        if redis.call('EXISTS', listed) == 0 then listed = ch.members end
        local occupancy = redis.call('ZCARD', listed)
        local own, ownInfo = '', ''
        if listed == ch.listed and viewer ~= '' then
          local record = redis.call('HGET', ch.pending, viewer)
          local current = redis.call('HGET', ch.st, viewer)
          if record and current and string.sub(record, 1, 1) == '0' then
            own, ownInfo = current, redis.call('HGET', ch.info, viewer) or ''
            occupancy = occupancy + 1
          end
        end
        if includeUserId ~= '1' or occupancy == 0 then return {occupancy, seq, {}, {}, 0, {}, own, ownInfo} end
        local start = '-'
        if after ~= '' then start = '(' .. after end
        local users = redis.call('ZRANGEBYLEX', listed, start, '+', 'LIMIT', 0, pageSize + 1)
        local more = 0
        if #users > pageSize then more = 1; users[#users] = nil end
        local states, infos = {}, {}
        if #users > 0 then
          states = redis.call('HMGET', ch.st, unpack(users))
          infos = redis.call('HMGET', ch.info, unpack(users))
          if listed == ch.listed then
            local records = redis.call('HMGET', ch.pending, unpack(users))
            local changed, names = {}, {}
            for i = 1, #users do
              if records[i] then
                local p = parsePending(records[i])
                if p.was then
                  states[i] = p.before
                  changed[#changed + 1] = i
                  names[#names + 1] = users[i]
                end
              end
            end
            if #names > 0 then
              local before = redis.call('HMGET', ch.pendingInfo, unpack(names))
              for k = 1, #changed do infos[changed[k]] = before[k] end
            end
          end
        end
        if includeState ~= '1' then states = {} end
        return {occupancy, seq, users, states, more, infos, own, ownInfo}
        """)

    /// What a TTL expiry needs: Redis' time, the member's state and its keys' deadlines
    /// (flat key, deadline).
    static let readExpiries = LuaScript("presence.readExpiries", parameters: Channel.parameters + [.text("user")],
                                        library: library, body: """
        return {now, redis.call('HGET', ch.st, user) or '', redis.call('HGETALL', ttlKey(user))}
        """)

    /// Members of one group's bucket (`P{<g>}due:ttl`) with TTL keys overdue by more than a
    /// second (their node stopped): channel id and user, for any node to expire.
    static let overdueExpiries = LuaScript("presence.overdueExpiries", parameters: [.key("dueSet"), .number("limit")], body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        return redis.call('ZRANGEBYSCORE', dueSet, '-inf', now - 1000, 'LIMIT', 0, limit)
        """)

    /// The channels of one group's bucket (`P{<g>}due`) whose interval flush is overdue by
    /// `slackMs` (Redis' clock): the node that scheduled them died or is cut off, so any node's
    /// reaper flushes them. Returns channel ids; the reaper asks every group.
    static let overdueFlushes = LuaScript("presence.overdue", parameters: [.key("dueSet"), .number("slackMs"), .number("limit")],
                                          body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        return redis.call('ZRANGEBYSCORE', dueSet, '-inf', now - slackMs, 'LIMIT', 0, limit)
        """)

    /// One roster of up to `limit` members for the viewers (the rest: user names), or none
    /// when the node's copy (`rosterSeq`, `rosterVersion`) still holds.
    static let snapshot = LuaScript("presence.snapshot", parameters: Channel.parameters + [
        .number("limit"), .number("rosterSeq"), .number("rosterVersion"),
    ], rest: "viewersFrom", library: library, body: """
        -- One roster for every viewer; only a viewer who joined since the last (interval) event
        -- sees its own entry added, so each further viewer gets that entry alone.
        local seq = tonumber(redis.call('HGET', ch.base, 'seq') or '0')
        local version = currentRosterVersion()
        local roster, cached = nil, 0
        if rosterSeq == seq and rosterVersion == version then
          local own, ownInfo = ownEntrySince(ARGV[viewersFrom])
          roster, cached = {0, {}, own, ownInfo}, 1
        else
          roster = rosterAtLastEvent(limit, ARGV[viewersFrom])
        end
        local others = {}
        for i = viewersFrom + 1, #ARGV do
          local state, info = ownEntrySince(ARGV[i])
          others[#others + 1] = state
          others[#others + 1] = info
        end
        return {redis.call('ZCARD', ch.members), redis.call('HGET', ch.base, 'mode') or 'announce',
          seq, roster, others, version, cached}
        """)
}
