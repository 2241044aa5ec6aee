import RollcallCore

/// Durable webhook events in cluster mode (PROTOCOL §11 *(1.2)* "Nothing lost";
/// docs/cluster.md, "Webhooks"). The scripts that make a change append its events to one
/// Redis stream, `P wh`, in the same script (``writer``); every node takes due events from it
/// through the consumer group `d` (``take``), posts them, and acknowledges them after a 2xx
/// (`XACK` + `XDEL`). An event is one entry: `k` its kind (`p` presence, `c` channel, `u`
/// user status), `b` its bytes (for `u`: the record's fields, as in a user's inbox), `v` the
/// user's record version (`u` only). Its id is the entry's id with its group's number, fixed
/// when it is written (``WebhookStream``).
enum WebhookStreamScripts {
    /// The writing half, part of the presence and user-status libraries. The script's `hooks`
    /// argument is `''` (webhooks off on the node that runs it) or
    /// `<kinds> <queueMaxEvents>` (``ClusterKeys/webhookHooks``); `hook(k, b, …)` appends one
    /// event of a kind the node's `webhooks.events` selects (others are never stored) to
    /// `hookStream`, and with `queueMaxEvents` entries already there the oldest one goes (counted
    /// in `<stream>:dropped`, read by the node that takes events next). Each writer names the
    /// stream, its owner's group's: a channel script its declared `channelStream`
    /// (``PresenceScripts/library``), a user-status change the user's (`announce`). *(Session 44:
    /// `hooks` named a stream too, group 0's, which both writers had come to override.)*
    static let writer = """
        local hookKinds, hookMax, hookStream = '', 0, ''
        if hooks ~= '' then
          local kinds, max = string.match(hooks, '^(%a*) (%d+)$')
          hookKinds, hookMax = kinds, tonumber(max)
        end
        local function hooksKind(k) return hookKinds ~= '' and string.find(hookKinds, k, 1, true) ~= nil end
        local function hook(k, b, ...)
          if not hooksKind(k) then return end
          if redis.call('XLEN', hookStream) >= hookMax then redis.call('INCR', hookStream .. ':dropped') end
          redis.call('XADD', hookStream, 'MAXLEN', hookMax, '*', 'k', k, 'b', b, ...)
        end

        """

    /// One node's turn at the stream, run when it has no batch in flight. In order, the first
    /// that finds anything answers: the entries still pending for this consumer (a node
    /// restarted with its id); entries pending for another consumer longer than `claimIdleMs`
    /// (a node that died or stopped: `XAUTOCLAIM`); new entries, if `count` of them wait or the
    /// oldest has waited `delayMs`. Entries trimmed away while pending are acknowledged and
    /// left out. Also forgets consumers with nothing pending that were idle past `claimIdleMs`
    /// (nodes gone for good). Returns `{entries as {id, k, b, v}, events dropped since the last
    /// turn (overflow), ms until the oldest new entry is due (0: none waits)}`. Writes nothing
    /// while the stream does not exist; creates the group on the first turn after it does.
    static let take = LuaScript("webhooks.take", parameters: [
        .key("stream"), .text("group"), .text("consumer"), .number("count"), .number("delayMs"), .number("claimIdleMs"),
    ], body: """
        local dropped = tonumber(redis.call('GETDEL', stream .. ':dropped') or '0')
        -- No stream yet (or Redis lost it): nothing to take, and no key is made here (polling
        -- must not write under the prefix: after a data loss the next register would find it).
        if redis.call('EXISTS', stream) == 0 then return {{}, dropped, 0, 0} end
        redis.pcall('XGROUP', 'CREATE', stream, group, '0')
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local function live(list)
          local out, gone = {}, {}
          for _, entry in ipairs(list or {}) do
            local fields = entry[2]
            if fields then
              local e = {entry[1], '', '', ''}
              for i = 1, #fields, 2 do
                if fields[i] == 'k' then e[2] = fields[i + 1]
                elseif fields[i] == 'b' then e[3] = fields[i + 1]
                elseif fields[i] == 'v' then e[4] = fields[i + 1] end
              end
              out[#out + 1] = e
            else
              gone[#gone + 1] = entry[1]
            end
          end
          if #gone > 0 then redis.call('XACK', stream, group, unpack(gone)) end
          return out
        end
        local function idMs(id) return tonumber(string.match(id, '^(%d+)')) end
        local own = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '0')
        local entries = live(own and own[1] and own[1][2])
        if #entries == 0 then
          local claimed = redis.call('XAUTOCLAIM', stream, group, consumer, claimIdleMs, '0-0', 'COUNT', count)
          entries = live(claimed[2])
        end
        local nextDue = 0
        if #entries == 0 then
          local last = '0-0'
          for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
            local info = {}
            for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
            if info['name'] == group then last = info['last-delivered-id'] end
          end
          local waiting = redis.call('XRANGE', stream, '(' .. last, '+', 'COUNT', count)
          if #waiting > 0 then
            if #waiting >= count or idMs(waiting[1][1]) + delayMs <= now then
              local fresh = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '>')
              entries = live(fresh and fresh[1] and fresh[1][2])
            else
              nextDue = math.max(1, idMs(waiting[1][1]) + delayMs - now)
            end
          end
        end
        for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
          local info = {}
          for i = 1, #c, 2 do info[c[i]] = c[i + 1] end
          if info['name'] ~= consumer and info['pending'] == 0 and info['idle'] > claimIdleMs then
            redis.call('XGROUP', 'DELCONSUMER', stream, group, info['name'])
          end
        end
        return {entries, dropped, nextDue, redis.call('XLEN', stream)}
        """)

    /// A batch was acknowledged (2xx) or dropped for good: its entries leave the group's
    /// pending list and the stream.
    static let settle = LuaScript("webhooks.settle", parameters: [.key("stream"), .text("group")], rest: "idsFrom", body: """
        local ids = {}
        for i = idsFrom, #ARGV do ids[#ids + 1] = ARGV[i] end
        if #ids == 0 then return 0 end
        redis.call('XACK', stream, group, unpack(ids))
        return redis.call('XDEL', stream, unpack(ids))
        """)

    /// The batch in flight is still this node's: its entries' idle time starts again, so no
    /// other node claims them while this one retries. Answers the stream's length.
    static let touch = LuaScript("webhooks.touch", parameters: [.key("stream"), .text("group"), .text("consumer")],
                                 rest: "idsFrom", body: """
        local args = {stream, group, consumer, 0}
        for i = idsFrom, #ARGV do args[#args + 1] = ARGV[i] end
        if #args > 4 then
          args[#args + 1] = 'JUSTID'
          redis.call('XCLAIM', unpack(args))
        end
        return redis.call('XLEN', stream)
        """)
}
