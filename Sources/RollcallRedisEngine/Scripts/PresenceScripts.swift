import RollcallCore

/// The Lua scripts of cluster presence (docs/cluster.md, "Presence in Redis"). Each one makes
/// one change atomically with its `seq` step and its `PUBLISH`, so every node sees one order
/// per channel. Swift computes states and encodes events; the scripts check that what Swift
/// read is still true (else they answer `retry`), store, count, append the event's last four
/// members (`occupancy`, `mode`, `seq`, `timestamp` from Redis' clock) and publish.
///
/// Each script names its arguments once (``LuaScript``): the channel's come first
/// (``Channel/parameters``: its hash key, its id, its pub/sub channel, its group's buckets of
/// due flushes, TTL deadlines and webhook events, `maxInstantEvents`, `hysteresis`, `intervalSeconds` in ms and the
/// head of its `interval` events), then the script's own; the calls are in
/// `PresenceScriptCalls.swift`.
///
/// A published presence event is `P<seq>\n<subject user>\n<event bytes>`; a message event
/// `M<publishing session>\n<held sessions that keep it, comma-separated>\n<event bytes>`.
enum PresenceScripts {
    static let join = LuaScript("presence.join", parameters: Channel.parameters + [
        .text("user"), .text("session"), .text("flags"), .text("expected"), .text("newState"),
        .text("headJoin"), .text("headChanged"), .text("enc"), .number("limit"),
    ] + MembershipIndexes.parameters + [.text("info"), .text("sessionRecord"), .text("node"), .number("checked"),
       .number("rosterSeq"), .number("rosterVersion"), .number("rosterFollows")],
    rest: "ttlFrom", library: library, body: """
        -- Fencing: only the node that owns the session joins for it (a node cut off, or declared
        -- dead, may not know yet that the session was resumed elsewhere or handed over). The
        -- session's fence copy here decides; a first join with the record in another slot is
        -- answered `first` (the node checks the record on the user's slot, then comes back).
        local fence = fenceOf(session, sessionRecord, node, checked == 1)
        if fence ~= 'ok' then return {fence} end
        -- `expected` is the node's guess (no read before the script): a wrong one is answered
        -- with the state Redis has, for the next attempt.
        local current = redis.call('HGET', ch.st, user)
        if (expected == '' and current) or (expected ~= '' and current ~= string.sub(expected, 2)) then
          return {'retry', current}
        end
        if not checkExpiries(user, ttlFrom) then return {'retry', current} end
        local oldFlags = redis.call('HGET', ch.sessions, session)
        redis.call('HSET', ch.sessions, session, flags)
        redis.call('HSET', ch.owners, session, node)
        if countsForMessages(oldFlags) ~= countsForMessages(flags) then
          redis.call('HINCRBY', ch.base, 'ml', countsForMessages(flags) and 1 or -1)
        end
        if not oldFlags then
          redis.call('HINCRBY', ch.counts, user, 1)
          -- The user's indexes: here when they share the channel's slot, else the node's step.
          if sessionChannels ~= '' then redis.call('SADD', sessionChannels, ch.id) end
        end
        if not current then
          redis.call('ZADD', ch.members, 0, user)
          -- The first member: the channel's hash is new, so its join is announced with `seq` 1.
          if redis.call('ZCARD', ch.members) == 1 then
            hookChannel('occupied', 1)
            -- A channel starts again at `seq` 1: its roster version moves past the last one's.
            bumpRosterVersion()
          end
          redis.call('HSET', ch.st, user, newState)
          if info ~= '' then redis.call('HSET', ch.info, user, info) else redis.call('HDEL', ch.info, user) end
          if userChannels ~= '' then redis.call('ZADD', userChannels, 0, ch.id) end
          redis.call('ZADD', allChannels, 0, channelEntry)
          memberChanged('join', user, enc, false, '{}', headJoin)
        elseif current ~= newState then
          redis.call('HSET', ch.st, user, newState)
          memberChanged('stateChanged', user, enc, true, current, headChanged)
        end
        local earliest = applyTTL(user, ttlFrom)
        local occupancy, mode, seq
        if announced then
          occupancy, mode, seq = announced.occupancy, 'announce', announced.seq
        else
          occupancy, mode = redis.call('ZCARD', ch.members), redis.call('HGET', ch.base, 'mode') or 'announce'
          seq = tonumber(redis.call('HGET', ch.base, 'seq') or '0')
        end
        local reply = {'ok', occupancy, mode, seq, dueAndNow(), {}, earliest, tonumber(redis.call('HGET', ch.base, 'mq') or '0')}
        if limit > 0 then
          -- The node's roster of this `seq` and version still holds (1), or the node has a read
          -- in flight that brings the current one (2): the joiner's own entry alone.
          local version = currentRosterVersion()
          local held = rosterSeq == reply[4] and rosterVersion == version
          if held or rosterFollows == 1 then
            local own, ownInfo = ownEntrySince(user)
            reply[6] = {0, {}, own, ownInfo}
            reply[10] = held and 1 or 2
          else
            reply[6] = rosterAtLastEvent(limit, user)
            reply[10] = 0
          end
          reply[9] = version
        end
        return reply
        """)

    static let leave = LuaScript("presence.leave", parameters: Channel.parameters + [
        .text("user"), .text("session"), .text("kind"), .text("head"), .text("enc"),
    ] + MembershipIndexes.parameters + [.text("sessionRecord"), .text("node")], library: library, body: """
        -- Fencing, for a client's own `leave` (`node` given; not for an end: its record is gone
        -- by then). A session with no fence copy here has not joined (every join writes one).
        if node ~= '' and fenceOf(session, sessionRecord, node, false) == 'fenced' then return {'fenced'} end
        local flags = redis.call('HGET', ch.sessions, session)
        if not flags then return {'notin'} end
        redis.call('HDEL', ch.sessions, session)
        -- A later join of the session here is a first join again.
        redis.call('HDEL', ch.owners, session)
        -- A held session was already out of the live count.
        if countsForMessages(flags) then
          if redis.call('SREM', ch.base .. ':hm', session) == 0 then redis.call('HINCRBY', ch.base, 'ml', -1) end
          forgetKept(ch.base, session)
        end
        if sessionChannels ~= '' then redis.call('SREM', sessionChannels, ch.id) end
        -- The third element: 1 when the user left the channel (its `uc:` entry goes), for the
        -- node's step on the user's slot when the indexes are not in this one.
        if redis.call('HINCRBY', ch.counts, user, -1) > 0 then return {'ok', dueAndNow(), 0} end
        redis.call('HDEL', ch.counts, user)
        local before = redis.call('HGET', ch.st, user) or '{}'
        redis.call('HDEL', ch.st, user)
        redis.call('ZREM', ch.members, user)
        if userChannels ~= '' then redis.call('ZREM', userChannels, ch.id) end
        forgetTTL(user)
        if kind == '-' then
          redis.call('HDEL', ch.pending, user)
          redis.call('HDEL', ch.pendingInfo, user)
          redis.call('ZREM', ch.listed, user)
          -- Gone from the roster as of the last event with no `seq` step.
          bumpRosterVersion()
        else
          memberChanged(kind == 't' and 'timeout' or 'leave', user, enc, true, before, head)
        end
        redis.call('HDEL', ch.info, user)
        if redis.call('ZCARD', ch.members) == 0 then
          -- Before the channel's hash (and its `seq`) goes.
          hookChannel('vacated', tonumber(redis.call('HGET', ch.base, 'seq') or '0'))
          redis.call('ZREM', allChannels, channelEntry)
          redis.call('ZREM', ch.due, ch.id)
          redis.call('DEL', ch.base, ch.pending, ch.info, ch.pendingInfo, ch.listed, ch.base .. ':lp')
        end
        return {'ok', dueAndNow(), 1}
        """)

    static let setState = LuaScript("presence.setState", parameters: Channel.parameters + [
        .text("user"), .text("expected"), .text("newState"), .text("head"), .text("enc"), .text("session"), .text("sessionRecord"),
        .text("node"), .number("checked"),
    ], rest: "ttlFrom", library: library, body: """
        -- Fencing, for a client's own change (`node` given; not for the expiry of keys): a node
        -- whose session was handed over changes nothing, and does not answer `notmember` for it
        -- either. The session's fence copy decides; with none here (not joined) its record does,
        -- in this script when it shares the slot, else `first` (the node checks it, then comes back).
        if node ~= '' then
          local fence = fenceOf(session, sessionRecord, node, checked == 1)
          if fence ~= 'ok' then return {fence} end
        end
        local current = redis.call('HGET', ch.st, user)
        if not current then return {'notmember'} end
        if current ~= expected or not checkExpiries(user, ttlFrom) then return {'retry', current} end
        if current ~= newState then
          redis.call('HSET', ch.st, user, newState)
          memberChanged('stateChanged', user, enc, true, current, head)
        end
        return {'ok', dueAndNow(), applyTTL(user, ttlFrom)}
        """)

    static let flush = LuaScript("presence.flush", parameters: Channel.parameters, library: library, body: """
        local due = redis.call('HGET', ch.base, 'due')
        if due and tonumber(due) <= now then
          flush()
          return {'flushed', dueAndNow()}
        end
        return {'notdue', dueAndNow()}
        """)

    /// Runs on its own small library (``publishLibrary``): a publish changes no member, so it
    /// needs none of the presence library's functions, and Redis' clock only for a held member.
    static let publish = LuaScript("presence.publish", parameters: Channel.parameters + [
        .text("session"), .text("token"), .text("user"), .text("requireMember"), .text("payload"), .text("prefix"), .number("heldLimit"),
    ], library: publishLibrary, body: """
        -- A member's publish: the channel has members. The server's: it may be empty.
        local occupied = requireMember == '1'
        if occupied and not redis.call('HGET', ch.st, user) then return {'notmember'} end
        local live = tonumber(redis.call('HGET', ch.base, 'ml') or '0')
        if countsForMessages(redis.call('HGET', ch.sessions, session)) then live = live - 1 end
        if not occupied then occupied = redis.call('EXISTS', ch.members) == 1 end
        -- The session's last publish token here (kept while the channel has members, so that
        -- nobody could receive a message twice): the same token again is a retry of a publish
        -- that ran, and publishes nothing. The hash is bounded: counted only when it grows.
        if token ~= '' and occupied then
          local tokens = ch.base .. ':lp'
          if redis.call('HGET', tokens, session) == token then return {'ok', live} end
          if redis.call('HSET', tokens, session, token) == 1 and redis.call('HLEN', tokens) > 4096 then
            redis.call('DEL', tokens)
            redis.call('HSET', tokens, session, token)
          end
        end
        -- Held sessions keep it for their resume, here in the channel, up to heldMessageBytes
        -- each (PROTOCOL §5; ``KeptMessageScripts``: the resume applies the limit across
        -- channels). The event names them (`kept`; those it did not fit too, their resume
        -- counts it), so that a node where one of them has resumed by the time the event
        -- arrives does not deliver it again, and the node that held one keeps only what Redis
        -- did not.
        local kept, head = {}, nil
        for _, held in ipairs(redis.call('SMEMBERS', ch.base .. ':hm')) do
          if held ~= session then
            if not head then
              -- Redis' time and the key group's order (`P{g}kq`, in the slot of the group's
              -- `due` bucket): how the resume orders messages kept in several channels.
              local clock = redis.call('TIME')
              local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
              head = now .. ' ' .. redis.call('INCR', string.sub(ch.due, 1, #ch.due - #'due') .. 'kq') .. '\\n'
            end
            keepMessage(ch.base, held, head, payload, heldLimit)
            kept[#kept + 1] = held
          end
        end
        -- Numbered per channel (`mq`, while the channel has members: nobody hears an empty
        -- one), so that a node drops what a session it just joined or resumed there saw
        -- before, however late its pub/sub link delivers it (the join and the claim answer
        -- the number they saw).
        local number = 0
        if occupied then number = redis.call('HINCRBY', ch.base, 'mq', 1) end
        redis.call(publishCommand, ch.events, 'N' .. number .. '\\n' .. session .. '\\n' .. table.concat(kept, ',') .. '\\n' .. payload)
        return {'ok', live}
        """)

    /// What ``publish`` runs after its parameters: the channel's keys it reads, whether a
    /// session's flags count it for messages, and ``KeptMessageScripts``. Not the presence
    /// ``library``: defining its functions and reading Redis' clock cost a publish about a
    /// fifth of its Redis time (BENCHMARKS.md, "Issue 30 item 4", "Session 49").
    static let publishLibrary = KeptMessageScripts.library + """
        local ch = {base = channelBase, events = channelEvents, due = channelDue}
        ch.members, ch.st, ch.sessions = ch.base .. ':m', ch.base .. ':st', ch.base .. ':s'

        """ + countsForMessages

    /// `countsForMessages(flags)`: whether a session's join flags count it among the channel's
    /// live message sessions (`ml`).
    static let countsForMessages = """
        local function countsForMessages(flags)
          return flags ~= nil and flags ~= false and string.find(flags, 'm', 1, true) ~= nil
        end

        """

    /// What every other presence script runs after its parameters (the channel's first: the
    /// ``Channel`` arguments): the channel's keys, Redis' time, and the announce/interval
    /// rules of `PresenceEngine+Changes.swift` in Lua.
    static let library = LuaScript.lessBytes + WebhookStreamScripts.writer + KeptMessageScripts.library + """
        -- A channel's webhook events go into its group's stream (declared: `channelStream`).
        hookStream = channelStream
        local ch = {base = channelBase, id = channelId, events = channelEvents, due = channelDue,
          maxInstant = maxInstantEvents, hysteresis = hysteresis, intervalMs = intervalMs}
        ch.members, ch.st, ch.counts = ch.base .. ':m', ch.base .. ':st', ch.base .. ':n'
        ch.sessions, ch.pending = ch.base .. ':s', ch.base .. ':pend'
        ch.info, ch.pendingInfo = ch.base .. ':info', ch.base .. ':pinfo'
        -- The roster as of the last event (listings), kept where events are emitted. A channel
        -- created before this key existed has none: its listings show the members now.
        ch.listed = ch.base .. ':lm'
        -- The fence copies (docs/cluster.md, "Where the build stands", step 1): session -> the
        -- node that owns it (`''` while held with no node), written by the join and by the
        -- claim, hold and orphaning (`presence.refence`), dropped by the leave.
        ch.owners = ch.base .. ':o'
        if intervalHead ~= '' then redis.call('HSETNX', ch.base, 'ih', intervalHead) end
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)


        -- Per-key TTLs (1.1): `P{<g>}c:<id>:ttl:<n>:<user>` holds key -> deadline; the group's
        -- due set (`P{<g>}due:ttl`) holds `<channel id>\\n<user>` by the member's earliest deadline.
        local function ttlKey(user) return ch.base .. ':ttl:' .. #user .. ':' .. user end
        local ttlDue = channelDueTTL

        local function earliestDeadline(user)
          local earliest = nil
          for _, value in ipairs(redis.call('HVALS', ttlKey(user))) do
            local deadline = tonumber(value)
            if not earliest or deadline < earliest then earliest = deadline end
          end
          return earliest
        end

        local function earliestTTL(user)
          local earliest = earliestDeadline(user)
          if earliest then
            redis.call('ZADD', ttlDue, earliest, ch.id .. '\\n' .. user)
          else
            redis.call('ZREM', ttlDue, ch.id .. '\\n' .. user)
          end
          return earliest or 0
        end

        -- TTL operations from argument `first` (the script's rest): a count, then (key, op, value) triples:
        -- `s` sets the key's deadline to now + value ms, `c` clears it, `x` clears an expired one.
        -- When they changed no deadline (none, or clears of keys that had none: a state change
        -- without TTLs clears its keys' deadlines), neither did the due entry that every change
        -- of them (here, or `forgetTTL`) keeps: it is only read.
        local function applyTTL(user, first)
          local count = tonumber(ARGV[first] or '0')
          local changed = false
          for i = 0, count - 1 do
            local key, op, value = ARGV[first + 1 + 3 * i], ARGV[first + 2 + 3 * i], ARGV[first + 3 + 3 * i]
            if op == 's' then
              redis.call('HSET', ttlKey(user), key, now + tonumber(value))
              changed = true
            elseif redis.call('HDEL', ttlKey(user), key) > 0 then
              changed = true
            end
          end
          if not changed then return earliestDeadline(user) or 0 end
          return earliestTTL(user)
        end

        -- An expiry may only remove keys whose deadline is still the one it read.
        local function checkExpiries(user, first)
          local count = tonumber(ARGV[first] or '0')
          for i = 0, count - 1 do
            local key, op, value = ARGV[first + 1 + 3 * i], ARGV[first + 2 + 3 * i], ARGV[first + 3 + 3 * i]
            if op == 'x' and redis.call('HGET', ttlKey(user), key) ~= value then return false end
          end
          return true
        end

        local function forgetTTL(user)
          redis.call('DEL', ttlKey(user))
          redis.call('ZREM', ttlDue, ch.id .. '\\n' .. user)
        end

        -- May `node` act for `session` here? `ok`, `fenced`, or `first`: no fence copy and the
        -- session's record in another slot (`record` empty), unless the node checked it
        -- (`checked`: `presence.userSide` answered `ok`).
        local function fenceOf(session, record, node, checked)
          local owner = redis.call('HGET', ch.owners, session)
          if owner then return owner == node and 'ok' or 'fenced' end
          if checked then return 'ok' end
          if record == '' then return 'first' end
          return redis.call('HGET', record, 'node') == node and 'ok' or 'fenced'
        end

        """ + countsForMessages + """
        -- What ``memberChanged`` left in the channel's hash when it announced the change: its
        -- occupancy and `seq`, mode announce; nil when it did not (no change, or deferred to an
        -- interval). A reply built after it reads none of them again, nor `due`: an announce-
        -- mode channel has no flush due (`deferChange` sets it in interval mode only, and the
        -- flush that ends interval mode deletes it).
        local announced = nil

        local function dueAndNow()
          if announced then return {0, now} end
          return {tonumber(redis.call('HGET', ch.base, 'due') or '0'), now}
        end

        -- The roster version (`rv` in the channel's hash; 0 before any): with `seq`, what a
        -- node's copy of the roster as of the last event is keyed on. Every change to that
        -- roster that steps no `seq` bumps it (docs/cluster.md, "One roster per node per seq").
        -- It moves to Redis' clock in µs when that is further, so a channel that empties and
        -- starts again at `seq` 1 never shows an earlier (`seq`, version) pair again.
        local function currentRosterVersion()
          return tonumber(redis.call('HGET', ch.base, 'rv') or '0')
        end

        local function bumpRosterVersion()
          local micros = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
          redis.call('HSET', ch.base, 'rv', string.format('%.0f', math.max(currentRosterVersion() + 1, micros)))
        end

        local function footer(occupancy, mode, seq)
          return ',"occupancy":' .. occupancy .. ',"mode":"' .. mode .. '","seq":' .. seq .. ',"timestamp":' .. now .. '}'
        end

        -- Webhook events go into the group's stream in the script that makes the change
        -- (PROTOCOL §11 "Nothing lost"; WebhookStreamScripts): a presence event as clients
        -- got it, and `channel` events with the `seq` of the event that occupied or vacated it.
        local function publishPresence(seq, subject, bytes)
          redis.call(publishCommand, ch.events, 'P' .. seq .. '\\n' .. subject .. '\\n' .. bytes)
          hook('p', bytes)
        end

        local function hookChannel(type, seq)
          if not hooksKind('c') then return end
          hook('c', '{"event":"channel","type":"' .. type .. '",' .. channelFields .. ',"timestamp":' .. now
            .. ',"seq":' .. seq .. '}')
        end

        -- A pending record: wasPresent (1/0), removal (-/l/t), #enc ':' enc, state at the last event.
        local function parsePending(record)
          local colon = string.find(record, ':', 3, true)
          local length = tonumber(string.sub(record, 3, colon - 1))
          return {was = string.sub(record, 1, 1) == '1', removal = string.sub(record, 2, 2),
            enc = string.sub(record, colon + 1, colon + length), before = string.sub(record, colon + length + 1)}
        end

        local function flush()
          local pending = redis.call('HGETALL', ch.pending)
          redis.call('DEL', ch.pending)
          redis.call('HDEL', ch.base, 'due')
          redis.call('ZREM', ch.due, ch.id)
          if #pending == 0 then
            redis.call('DEL', ch.pendingInfo)
            return
          end
          local joins, leaves, timeouts, changes = {}, {}, {}, {}
          local infoChanged = false
          for i = 1, #pending, 2 do
            local user, p = pending[i], parsePending(pending[i + 1])
            local current = redis.call('HGET', ch.st, user)
            local entry = {user = user, enc = p.enc, state = current}
            if p.was and not current then
              if p.removal == 't' then timeouts[#timeouts + 1] = entry else leaves[#leaves + 1] = entry end
            elseif not p.was and current then
              entry.info = redis.call('HGET', ch.info, user)
              joins[#joins + 1] = entry
              if current ~= '{}' then changes[#changes + 1] = entry end
            elseif p.was and current and current ~= p.before then
              changes[#changes + 1] = entry
            elseif p.was and current and (redis.call('HGET', ch.info, user) or '') ~= (redis.call('HGET', ch.pendingInfo, user) or '') then
              -- Left and joined again with another info, the same state: no event shows it.
              infoChanged = true
            end
          end
          redis.call('DEL', ch.pendingInfo)
          if #joins + #leaves + #timeouts + #changes == 0 then
            if infoChanged then bumpRosterVersion() end
            return
          end
          if redis.call('EXISTS', ch.listed) == 1 then
            for _, e in ipairs(joins) do redis.call('ZADD', ch.listed, 0, e.user) end
            for _, e in ipairs(leaves) do redis.call('ZREM', ch.listed, e.user) end
            for _, e in ipairs(timeouts) do redis.call('ZREM', ch.listed, e.user) end
          end
          local byUser = function(a, b) return lessBytes(a.user, b.user) end
          table.sort(joins, byUser); table.sort(leaves, byUser); table.sort(timeouts, byUser); table.sort(changes, byUser)
          local function names(list)
            local out = {}
            for i, e in ipairs(list) do out[i] = e.enc end
            return '[' .. table.concat(out, ',') .. ']'
          end
          local function states(list)
            local out = {}
            for i, e in ipairs(list) do out[i] = '{"userId":' .. e.enc .. ',"state":' .. e.state .. '}' end
            return '[' .. table.concat(out, ',') .. ']'
          end
          local function joinInfo(list)
            local out = {}
            for _, e in ipairs(list) do
              if e.info then out[#out + 1] = e.enc .. ':' .. e.info end
            end
            if #out == 0 then return '' end
            return ',"joinInfo":{' .. table.concat(out, ',') .. '}'
          end
          local seq = redis.call('HINCRBY', ch.base, 'seq', 1)
          local bytes = redis.call('HGET', ch.base, 'ih') .. ',"interval":{"join":' .. names(joins)
            .. ',"leave":' .. names(leaves) .. ',"timeout":' .. names(timeouts)
            .. ',"stateChanged":' .. states(changes) .. joinInfo(joins) .. '}'
            .. footer(redis.call('ZCARD', ch.members), 'interval', seq)
          publishPresence(seq, '', bytes)
        end

        local function deferChange(user, enc, wasPresent, before, removal)
          local record = redis.call('HGET', ch.pending, user)
          if not record then
            record = (wasPresent and '1' or '0') .. '-' .. #enc .. ':' .. enc .. before
            -- The info at the last event, for snapshots of the roster as of that event.
            if wasPresent then redis.call('HSET', ch.pendingInfo, user, redis.call('HGET', ch.info, user) or '') end
          end
          if removal then record = string.sub(record, 1, 1) .. removal .. string.sub(record, 3) end
          redis.call('HSET', ch.pending, user, record)
          if not redis.call('HGET', ch.base, 'due') then
            local due = now + ch.intervalMs
            redis.call('HSET', ch.base, 'due', due)
            redis.call('ZADD', ch.due, due, ch.id)
          end
        end

        -- A change already applied to the member set and states: announced now, or kept for
        -- the next interval event; switches modes at the thresholds.
        local function memberChanged(change, user, enc, wasPresent, before, head)
          local occupancy = redis.call('ZCARD', ch.members)
          local mode = redis.call('HGET', ch.base, 'mode') or 'announce'
          local removal = nil
          if change == 'leave' then removal = 'l' elseif change == 'timeout' then removal = 't' end
          if mode == 'announce' then
            if change == 'join' and occupancy > ch.maxInstant then
              redis.call('HSET', ch.base, 'mode', 'interval')
              deferChange(user, enc, wasPresent, before, removal)
            else
              local seq = redis.call('HINCRBY', ch.base, 'seq', 1)
              if change == 'join' and (occupancy == 1 or redis.call('EXISTS', ch.listed) == 1) then
                redis.call('ZADD', ch.listed, 0, user)
              elseif removal then
                redis.call('ZREM', ch.listed, user)
              end
              publishPresence(seq, user, head .. footer(occupancy, 'announce', seq))
              announced = {occupancy = occupancy, seq = seq}
            end
          else
            deferChange(user, enc, wasPresent, before, removal)
            if removal and occupancy <= ch.maxInstant - ch.hysteresis then
              flush()
              redis.call('HSET', ch.base, 'mode', 'announce')
            end
          end
        end

        -- The first `limit` members as of the channel's last event, with their states and infos
        -- (flat triples; '' for no info), and how many members that roster has; plus the
        -- viewer's current state and info when the viewer joined since (else '').
        -- The snapshot a joiner gets (PresenceEngine.sendSnapshot).
        local function rosterAtLastEvent(limit, viewer)
          local occupancy = redis.call('ZCARD', ch.members)
          local pendingList = redis.call('HGETALL', ch.pending)
          local pending, departed = {}, {}
          for i = 1, #pendingList, 2 do
            local user, p = pendingList[i], parsePending(pendingList[i + 1])
            if p.was then p.info = redis.call('HGET', ch.pendingInfo, user) or '' end
            pending[user] = p
            local present = redis.call('ZSCORE', ch.members, user)
            if p.was and not present then
              departed[#departed + 1] = {user, p.before, p.info}
              occupancy = occupancy + 1
            elseif not p.was and present then
              occupancy = occupancy - 1
            end
          end
          table.sort(departed, function(a, b) return lessBytes(a[1], b[1]) end)
          local shown, full, nextDeparted = {}, false, 1
          local function emit(user, state, info)
            if #shown >= 3 * limit then full = true; return false end
            shown[#shown + 1] = user
            shown[#shown + 1] = state
            shown[#shown + 1] = info or ''
            return true
          end
          local cursor = '-'
          while not full do
            local users = redis.call('ZRANGEBYLEX', ch.members, cursor, '+', 'LIMIT', 0, 256)
            if #users == 0 then break end
            local states = redis.call('HMGET', ch.st, unpack(users))
            local infos = redis.call('HMGET', ch.info, unpack(users))
            for i = 1, #users do
              local user = users[i]
              while nextDeparted <= #departed and lessBytes(departed[nextDeparted][1], user) do
                if not emit(departed[nextDeparted][1], departed[nextDeparted][2], departed[nextDeparted][3]) then break end
                nextDeparted = nextDeparted + 1
              end
              if full then break end
              local p = pending[user]
              if p then
                if p.was and not emit(user, p.before, p.info) then break end
              elseif not emit(user, states[i], infos[i]) then
                break
              end
            end
            cursor = '(' .. users[#users]
          end
          while not full and nextDeparted <= #departed do
            if not emit(departed[nextDeparted][1], departed[nextDeparted][2], departed[nextDeparted][3]) then break end
            nextDeparted = nextDeparted + 1
          end
          local insert, insertInfo = '', ''
          local viewerPending = pending[viewer]
          if viewerPending and not viewerPending.was then
            insert = redis.call('HGET', ch.st, viewer) or ''
            insertInfo = redis.call('HGET', ch.info, viewer) or ''
          end
          return {occupancy, shown, insert, insertInfo}
        end

        -- The viewer's current state and info when it joined since the last event (else ''
        -- twice): what a snapshot adds to the roster as of that event.
        local function ownEntrySince(viewer)
          local record = redis.call('HGET', ch.pending, viewer)
          if record and string.sub(record, 1, 1) == '0' then
            return redis.call('HGET', ch.st, viewer) or '', redis.call('HGET', ch.info, viewer) or ''
          end
          return '', ''
        end

        """
}
