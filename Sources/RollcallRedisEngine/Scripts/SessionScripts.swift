import RollcallCore

/// The Lua scripts of cluster sessions (docs/cluster.md, "Sessions across nodes"). A session
/// is `P{<g>}s:<id>` (user, platform, node, started, timeout, heldUntil, token hash), `<g>`
/// its user's key group (``SessionScriptKeys``), listed in `P{<g>}us:<n>:<user>` (by start
/// time, for `maxSessionsPerUser`), `P{<g>}tok:<hash>` (resume token → `<g>/<id>`, in the user's group: a resume names its user), `P{<g>}ns:<node>`
/// (the node's sessions of group `<g>`, bare ids) and, while held, its group's bucket `P{<g>}held` (by
/// deadline). A script the node gives a session id is given its record's key too (`record`,
/// declared: the node knows each of its sessions' users), and the buckets of its group it
/// writes (`held`, `ending`; the library's `forget` and `markEnding` name the same keys from
/// the record's tag, as the reaper calls them for every group). Each script's `prefix` is
/// `cluster.keyPrefix`; times are Redis' (`TIME`, ms).
package enum SessionScripts {
    /// A new session. Returns `{'ok', over}`, `over` the user's sessions over the limit,
    /// oldest first, each as id and node (`''` while held with no node); or `{'fenced'}` when
    /// the node was declared dead (and not told yet by its heartbeat): with one key group it
    /// is not among the live nodes, with more the user's group holds a fence mark of it newer
    /// than `liveAt` (`isLiveHere`); or `{'cancelled'}` when its node gave up on it
    /// before it ran (``cancelStart``).
    static let start = LuaScript("session.start", parameters: [
        .key("record"), .text("prefix"), .text("id"), .text("user"), .text("platform"), .text("node"), .text("timeout"), .text("token"),
        .number("max"), .number("groups"), .number("liveAt"),
    ], library: library, body: """
        local tag = tagOfRecord(record, id)
        if not isLiveHere(tag, node, liveAt) then return {'fenced'} end
        if redis.call('EXISTS', tag .. 'cancel:s:' .. id) == 1 then return {'cancelled'} end
        redis.call('HSET', record, 'user', user, 'platform', platform, 'node', node, 'started', now,
          'timeout', timeout, 'heldUntil', 0, 'token', token)
        redis.call('ZADD', userSessions(tag, user), now, id)
        redis.call('SET', tag .. 'tok:' .. token, entryOf(tag, id))
        redis.call('SADD', tag .. 'ns:' .. node, id)
        local all = redis.call('ZRANGE', userSessions(tag, user), 0, -1)
        local excess, out = #all - max, {}
        for _, other in ipairs(all) do
          if excess <= 0 then break end
          if other ~= id then
            out[#out + 1] = other
            out[#out + 1] = redis.call('HGET', tag .. 's:' .. other, 'node') or ''
            excess = excess - 1
          end
        end
        return {'ok', out}
        """)

    /// A local session dropped abnormally: held until now + its timeout, still owned by its node.
    /// Messages published from now on are kept in Redis; those published before reached the
    /// node, which kept them. On `ok` the node publishes `held <id>` on its own control channel
    /// (``ClusterSessions``): on one Redis it follows them all (it runs after this script, one
    /// pub/sub link, in publish order), and then the node hands them over (``keepHeard``);
    /// until it has (`handing`, at most `staleMs` of ``claim``), a resume waits.
    static let hold = LuaScript("session.hold", parameters: [.key("record"), .key("held"), .text("prefix"), .text("id"), .text("node"),
                                                             .number("groups")],
                                library: library, body: """
        local key, tag = record, tagOfRecord(record, id)
        if redis.call('HGET', key, 'node') ~= node then return 'gone' end
        local deadline = now + tonumber(redis.call('HGET', key, 'timeout') or '0')
        redis.call('HSET', key, 'heldUntil', deadline, 'handing', now)
        redis.call('ZADD', held, deadline, id)
        markHeld(id, tag, nil)
        return 'ok'
        """)

    /// The node that holds session `id` hands over the messages it kept for it after its
    /// connection dropped and before its hold ran in Redis (the `rest`, oldest first; `dropped`
    /// did not fit there), up to `limit` bytes (the oldest stay, the rest are counted as
    /// dropped), into the session's own `P{<g>}hm:<id>` (its user's slot): a resume delivers
    /// them ahead of what its channels kept since (``KeptMessageScripts``). Returns `ok`,
    /// `live` (it was resumed on this node meanwhile: the node delivers them itself) or `gone`
    /// (ended, or on another node). Either way a resume no longer waits for it. Sent again
    /// after it ran (its answer lost), it finds the hand-over done and changes nothing.
    static let keepHeard = LuaScript("session.keepHeard", parameters: [
        .key("record"), .text("prefix"), .text("id"), .text("node"), .number("limit"), .number("dropped"),
    ], rest: "heard", library: library, body: """
        local key, tag = record, tagOfRecord(record, id)
        if redis.call('HGET', key, 'node') ~= node then return 'gone' end
        if tonumber(redis.call('HGET', key, 'heldUntil') or '0') == 0 then
          redis.call('HDEL', key, 'handing')
          return 'live'
        end
        if redis.call('HDEL', key, 'handing') == 0 then return 'ok' end
        local list, bytes, lost = tag .. 'hm:' .. id, 0, dropped
        redis.call('DEL', list)
        for i = heard, #ARGV do
          if bytes + #ARGV[i] <= limit then
            redis.call('RPUSH', list, ARGV[i])
            bytes = bytes + #ARGV[i]
          else
            lost = lost + 1
          end
        end
        redis.call('DEL', tag .. 'hmd:' .. id)
        if lost > 0 then redis.call('SET', tag .. 'hmd:' .. id, lost) end
        return 'ok'
        """)

    /// A resume: takes a held session over by its token, on any node — or a live one whose
    /// node has stopped beating for `staleMs`. Returns `none` (also when its node gave up on
    /// this claim before it ran: ``cancelClaim``), `fenced` (as `session.start`), `wait` (the
    /// node that holds it, alive, has not handed over what it heard before the hold yet:
    /// ``hold``; asked again shortly, it changed nothing), or `ok`, id,
    /// platform, previous node, timeout ms, channel ids, their join flags, the messages its
    /// node heard before the hold and how many of those were dropped, each channel's message
    /// number, and what each channel kept for it (entries, dropped: ``KeptMessageScripts``;
    /// with more than one key group each channel's refence answers it instead). The node that
    /// claimed tells the previous node (another one) `adopted <id> <token>` (the hash claimed)
    /// once it has the answer. The messages handed over stay in `P{<g>}hmc:<id>` and each
    /// channel's `:kc:<id>` for `markMs`, for a ``cancelClaim`` to put back.
    ///
    /// With more than one key group the liveness it reads is passed in: `liveAt` (as for
    /// ``start``) and, as the rest, the live nodes' beat ages (node, ms) from this node's
    /// latest beat, for the test of the owner's beat (`staleMs`); with one group both are read
    /// from `P{0}nodes` in the script.
    static let claim = LuaScript("session.claim", parameters: [
        .key("tokenKey"), .key("newTokenKey"), .key("cancelMark"), .text("prefix"), .text("token"), .text("user"), .text("node"), .text("newToken"), .number("staleMs"), .number("markMs"),
        .number("groups"), .number("liveAt"),
    ], rest: "ages", library: library, body: """
        if not isLiveHere(string.sub(tokenKey, 1, #tokenKey - #('tok:' .. token)), node, liveAt) then return {'fenced'} end
        if redis.call('EXISTS', cancelMark) == 1 then return {'none'} end
        local entry = redis.call('GET', tokenKey)
        if not entry then return {'none'} end
        local tag, id = fromEntry(entry)
        local key = tag .. 's:' .. id
        local f = redis.call('HMGET', key, 'user', 'platform', 'node', 'heldUntil', 'timeout', 'handing')
        if not f[1] or f[1] ~= user then return {'none'} end
        -- How long ago the node `owner` last beat: read here with one key group; with more,
        -- from the ages this node's latest beat saw (passed in; at most a heartbeat old, so
        -- a node that just stopped is taken for live a little longer; before this node's
        -- first live beat, every owner is). nil: not a live node.
        local function beatAge(owner)
          if groups <= 1 then
            local beat = redis.call('ZSCORE', control .. 'nodes', owner)
            return beat and now - tonumber(beat) or nil
          end
          if liveAt == 0 then return 0 end
          for i = ages, #ARGV - 1, 2 do
            if ARGV[i] == owner then return tonumber(ARGV[i + 1]) end
          end
          return nil
        end
        if tonumber(f[4]) == 0 then
          -- Live on its node: only a node that stopped beating (killed, cut off) gives it up
          -- before it is declared dead, so a client that reconnects at once still resumes.
          local age = beatAge(f[3])
          if f[3] == node or (age and age < staleMs) then return {'none'} end
        elseif f[6] and f[3] ~= '' and now - tonumber(f[6]) < staleMs then
          -- Its node has not handed over what it heard before the hold: wait while it beats.
          local age = beatAge(f[3])
          if age and age < staleMs then return {'wait'} end
        end
        redis.call('DEL', tokenKey)
        redis.call('SET', newTokenKey, entry)
        redis.call('HSET', key, 'node', node, 'heldUntil', 0, 'token', newToken, 'since', now)
        redis.call('HDEL', key, 'handing')
        redis.call('ZREM', tag .. 'held', id)
        if f[3] ~= '' then
          redis.call('SREM', tag .. 'ns:' .. f[3], id)
        end
        redis.call('SADD', tag .. 'ns:' .. node, id)
        markLive(id, tag, node)
        local channels = redis.call('SMEMBERS', tag .. 'sc:' .. id)
        local flags, numbers, keptHere, droppedHere = {}, {}, {}, {}
        -- With more than one key group the channels are in other slots: the node sends each
        -- one `presence.refence`, which answers these (`--`, 0 and nothing here).
        for i, channel in ipairs(channels) do
          flags[i], numbers[i], keptHere[i], droppedHere[i] = '--', 0, {}, 0
          if groups <= 1 then
            local base = channelBaseOf(channel)
            flags[i] = redis.call('HGET', base .. ':s', id) or '--'
            numbers[i] = tonumber(redis.call('HGET', base, 'mq') or '0')
            if string.find(flags[i], 'm', 1, true) then keptHere[i], droppedHere[i] = takeKept(base, id, newToken, markMs) end
          end
        end
        local messages = redis.call('LRANGE', tag .. 'hm:' .. id, 0, -1)
        local dropped = tonumber(redis.call('GET', tag .. 'hmd:' .. id) or '0')
        -- Handed over, and kept a while in case this claim's answer is lost (`cancelClaim`).
        -- (`P{<g>}hmc:<id>`: how many were dropped, then the messages.)
        local handed = tag .. 'hmc:' .. id
        redis.call('DEL', handed, tag .. 'hmd:' .. id)
        if #messages > 0 then redis.call('RENAME', tag .. 'hm:' .. id, handed) end
        if #messages > 0 or dropped > 0 then
          redis.call('LPUSH', handed, dropped)
          redis.call('PEXPIRE', handed, markMs)
        end
        return {'ok', id, f[2], f[3], tonumber(f[5]), channels, flags, messages, dropped, numbers, keptHere, droppedHere}
        """)

    /// A claim this node gave up on (its answer was lost or late: the client was answered
    /// `UNAVAILABLE`, or its connection went away), made void, sent until Redis answers it.
    /// If the claim ran, the session is held again with no node, under its old token, with the
    /// messages the claim handed over (the hold runs from now, as after a node's death): the
    /// client's retry resumes it, or the reaper times it out. If it has not run yet, a mark
    /// (`P{<g>}cancel:t:<newToken>`, in the user's group, for `markMs`) makes it find nothing when it does. Returns
    /// `{'held', id, channels}` (with more than one key group the node refences the session's
    /// channels, as the claim's refence made them name it, and puts back what each channel's
    /// refence took: ``ClusterSessions``), `marked`, or `gone` (the session moved on: ended,
    /// or taken over again).
    static let cancelClaim = LuaScript("session.cancelClaim", parameters: [
        .key("tokenKey"), .key("newTokenKey"), .key("cancelMark"), .text("prefix"), .text("token"), .text("newToken"), .text("node"), .number("markMs"),
        .number("groups"),
    ], library: library, body: """
        -- Redis lost the cluster's data (read with one key group; with more, `meta` is in
        -- another slot, and what a wiped Redis gets is a mark that expires).
        if groups <= 1 and redis.call('HEXISTS', control .. 'meta', 'epoch') == 0 then return 'gone' end
        local entry = redis.call('GET', newTokenKey)
        if not entry then
          redis.call('SET', cancelMark, '1', 'PX', markMs)
          return 'marked'
        end
        local tag, id = fromEntry(entry)
        local key = tag .. 's:' .. id
        local holder = redis.call('HGET', key, 'node')
        if holder ~= node and holder ~= '' then return 'gone' end
        redis.call('DEL', newTokenKey)
        redis.call('SET', tokenKey, entry)
        redis.call('HSET', key, 'token', token)
        local channels = {}
        if holder == node then
          local deadline = now + tonumber(redis.call('HGET', key, 'timeout') or '0')
          redis.call('HSET', key, 'node', '', 'heldUntil', deadline)
          redis.call('ZADD', tag .. 'held', deadline, id)
          redis.call('SREM', tag .. 'ns:' .. node, id)
          markHeld(id, tag, '')
        end
        -- The messages the claim handed over come first, before any kept since: its node's
        -- here, each channel's by `restoreKept` (in this script with one key group; with
        -- more, the node's refence of each channel).
        if groups > 1 then
          channels = redis.call('SMEMBERS', tag .. 'sc:' .. id)
        else
          for _, channel in ipairs(redis.call('SMEMBERS', tag .. 'sc:' .. id)) do restoreKept(channelBaseOf(channel), id, newToken) end
        end
        local handed = redis.call('LRANGE', tag .. 'hmc:' .. id, 0, -1)
        redis.call('DEL', tag .. 'hmc:' .. id)
        if #handed > 0 then
          for i = #handed, 2, -1 do redis.call('LPUSH', tag .. 'hm:' .. id, handed[i]) end
          redis.call('INCRBY', tag .. 'hmd:' .. id, tonumber(handed[1]))
        end
        return {'held', id, channels}
        """)

    /// A `session.start` this node gave up on (its answer was lost or late), made void, sent
    /// until Redis answers it. If it ran, the session ends as a close would (`{'ended', user}`:
    /// the node then sends `status.ended`; it joined no channel); if not, a mark
    /// (`P cancel:s:<id>`, for `markMs`) makes it refuse when it runs (`{'marked'}`).
    static let cancelStart = LuaScript("session.cancelStart", parameters: [
        .key("record"), .key("held"), .key("ending"), .text("prefix"), .text("id"), .text("node"), .number("markMs"), .number("groups"),
    ], library: library, body: """
        if groups <= 1 and redis.call('HEXISTS', control .. 'meta', 'epoch') == 0 then return {'gone'} end
        local tag = tagOfRecord(record, id)
        local f = redis.call('HMGET', record, 'user', 'node', 'token')
        if not f[1] then
          redis.call('SET', tag .. 'cancel:s:' .. id, '1', 'PX', markMs)
          return {'marked'}
        end
        if f[2] ~= node and f[2] ~= '' then return {'gone'} end
        forget(tag, id, f[1], f[2], f[3])
        markEnding(tag, id, f[1], 'l', 'closed')
        return {'ended', f[1]}
        """)

    /// A session ends for good, on the node that owns it (or any node for one with no node).
    /// `kind`: how its members leave (`l` leave, `t` timeout); `how`: how it ended (`logout` or
    /// `closed`); `token`: the hash of the resume token the ending node knew for it (`''`:
    /// any). Returns `ok` (its channels are left by the caller, then
    /// `status.ended`; until then the end is listed in its group's `P{<g>}ending`), `gone` when it ended
    /// already, or `moved` when another node took it over — or a resume took it over since
    /// (its token changed), even on this node: a node's end of a hold that ran out while Redis
    /// was out of reach, sent again once Redis was back, must not end the session its client
    /// resumed meanwhile.
    package static let end = LuaScript("session.end", parameters: [
        .key("record"), .key("held"), .key("ending"), .text("prefix"), .text("id"), .text("node"), .text("kind"), .text("how"), .text("token"),
    ], library: library, body: """
        local tag = tagOfRecord(record, id)
        local f = redis.call('HMGET', record, 'user', 'node', 'token')
        if not f[1] then return 'gone' end
        if f[2] ~= node and f[2] ~= '' then return 'moved' end
        if token ~= '' and f[3] ~= token then return 'moved' end
        forget(tag, id, f[1], f[2], f[3])
        markEnding(tag, id, f[1], kind, how)
        return 'ok'
        """)

    /// The reaper's first step, every heartbeat, on the control slot (`P{0}`): declares nodes
    /// silent for the timeout dead (taken out of `nodes`, marked `dead:`, `node:` deleted) and
    /// records them in `P{0}reaping`, the nodes whose sessions the groups still have to orphan
    /// (``reapGroup``, then ``reaped``). Commands a node sent before Redis stopped may run only
    /// once it is back, after every node was silent: that silence opens a grace window, it is no
    /// death (PROTOCOL §9). With `leaseMs` > 0 it also hands out the scanner's lease
    /// (`P{0}scanner`, `leaseMs` long, kept by its holder at each of its ticks, taken over by
    /// any node once it lapsed or its holder is no live node; with `release` 1 its holder gives
    /// it up, as its reads of the groups failed): only the scanner reads the key groups'
    /// buckets (docs/cluster.md, "The scans"). `subscriptions` ≥ 0: the cluster's unexpired
    /// subscriptions as the scanning node's last sweep of every group counted them, kept in
    /// `meta` (`subs`) for every node's `rollcall_subscriptions`. Returns the nodes declared
    /// dead now, every node being reaped, whether unfinished ends are due (1: out of a grace
    /// window), whether this node scans (1), the kept subscription count, and when each node
    /// being reaped was declared dead (`P{0}deaths`, Redis ms; ``reapGroup`` marks it so).
    static let declareDead = LuaScript("session.declareDead", parameters: [
        .key("meta"), .text("prefix"), .text("self"), .number("timeout"), .number("leaseMs"), .number("release"), .number("subscriptions"),
    ], library: library, body: """
        local dead = {}
        -- Redis lost the cluster's data: nothing to declare or scan until a node registered again.
        if redis.call('HEXISTS', meta, 'epoch') == 0 then return {dead, {}, 0, 0, 0} end
        local last = tonumber(redis.call('HGET', meta, 'lastBeat') or '0')
        if last > 0 and now - last >= timeout then redis.call('HSET', meta, 'grace', now) end
        redis.call('HSET', meta, 'lastBeat', now)
        local grace = tonumber(redis.call('HGET', meta, 'grace') or '0')
        local settled = now - grace >= timeout
        if settled then
          for _, node in ipairs(redis.call('ZRANGEBYSCORE', control .. 'nodes', '-inf', now - timeout)) do
            if node ~= self then
              redis.call('ZREM', control .. 'nodes', node)
              -- Marked dead, so that a beat of it that arrives late (sent before it was cut
              -- off, delivered when the link came back) cannot put it back among the live
              -- nodes before it has learned that its sessions were handed over.
              redis.call('SET', control .. 'dead:' .. node, now, 'PX', math.max(60000, 10 * timeout))
              redis.call('SADD', control .. 'reaping', node)
              redis.call('HSET', control .. 'deaths', node, now)
              redis.call('DEL', control .. 'node:' .. node)
              dead[#dead + 1] = node
            end
          end
        end
        local scans = 1
        if leaseMs > 0 then
          local holder = redis.call('GET', control .. 'scanner')
          if holder and holder ~= self and isLive(holder) then
            scans = 0
          elseif release == 1 then
            if holder == self then redis.call('DEL', control .. 'scanner') end
            scans = 0
          else
            redis.call('SET', control .. 'scanner', self, 'PX', leaseMs)
          end
        end
        if subscriptions >= 0 then redis.call('HSET', meta, 'subs', subscriptions) end
        local reaping = redis.call('SMEMBERS', control .. 'reaping')
        local deaths = {}
        for i, node in ipairs(reaping) do deaths[i] = tonumber(redis.call('HGET', control .. 'deaths', node) or now) end
        return {dead, reaping, settled and 1 or 0, scans, tonumber(redis.call('HGET', meta, 'subs') or '0'), deaths}
        """)

    /// The reaper's second step, for one key group (its `held` and `ending` buckets, declared):
    /// the sessions the nodes being reaped (the rest: ``declareDead``'s list) had in this group
    /// (`P{<g>}ns:<node>`) become held from now, with no node; then held sessions with no node
    /// whose hold ended time out (and those of a node whose hold ended more than `timeout`
    /// ago, which their node did not end), and, when `endsDue` is 1, the ends some node began and did not
    /// finish within the `timeout` (it died between `session.end` and `status.ended`) are handed
    /// out, up to `limit` of each kind. Returns the ended sessions and the unfinished ends, each
    /// as id, user, kind (`l`/`t`), how (`logout`/`closed`) and the channel ids not left yet,
    /// then, with more than one group, the orphaned sessions whose channels the node must
    /// refence, with their channels and the dead node (`P{<g>}rf:<node>`, this call's and any
    /// earlier call's not confirmed yet by ``refenced``). An unfinished end is due again one timeout later
    /// (should this node die as well); `status.ended` takes it off the list. The rest: each
    /// node being reaped and when it was declared dead; with more than one key group the
    /// group keeps that time as the node's fence mark (`P{<g>}fence:<node>`, ten minutes or
    /// ten node timeouts), written with the orphaning, so that a start or a claim the node
    /// sends from before its death is refused here (``isLiveHere``).
    static let reapGroup = LuaScript("session.reapGroup", parameters: [
        .key("held"), .key("ending"), .text("prefix"), .number("timeout"), .number("limit"), .number("endsDue"), .number("groups"),
    ], rest: "nodes", library: library, body: """
        local tag = string.sub(held, 1, #held - #'held')
        local orphaned = {}
        for i = nodes, #ARGV - 1, 2 do
          local node = ARGV[i]
          local diedAt = tonumber(ARGV[i + 1])
          if groups <= 1 then
            orphan(tag, node, {}, nil, diedAt)
          else
            -- The orphaned sessions whose channels are not refenced yet are logged
            -- (`P{<g>}rf:<node>`) and answered at every call until the scanner's refence ran
            -- (`session.refenced` takes them off): a scanner that dies in between leaves them
            -- to the next, and the node stays in `P{0}reaping` until the log is empty.
            local log = tag .. 'rf:' .. node
            orphan(tag, node, {}, log, diedAt)
            redis.call('SET', tag .. 'fence:' .. node, ARGV[i + 1], 'PX', math.max(600000, 10 * timeout))
            for _, id in ipairs(redis.call('SMEMBERS', log)) do
              -- Claimed or ended since: that refenced its channels, or leaves them.
              if redis.call('HGET', tag .. 's:' .. id, 'node') == '' then
                orphaned[#orphaned + 1] = {entryOf(tag, id), redis.call('SMEMBERS', tag .. 'sc:' .. id), node}
              else
                redis.call('SREM', log, id)
              end
            end
          end
        end
        local ended = {}
        local due = redis.call('ZRANGEBYSCORE', held, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
        for i = 1, #due, 2 do
          local id, deadline = due[i], tonumber(due[i + 1])
          local f = redis.call('HMGET', tag .. 's:' .. id, 'user', 'node', 'token')
          if not f[1] then
            redis.call('ZREM', held, id)
          elseif f[2] == '' or deadline <= now - timeout then
            -- With no node; or a node that should have ended it a node timeout ago and did not:
            -- it no longer has the session (Redis went back in time under it, or took a claim
            -- back after its `adopted` went out), or cannot reach Redis (its end, retried, then
            -- finds it gone and leaves the channels again, which changes nothing).
            forget(tag, id, f[1], f[2], f[3])
            markEnding(tag, id, f[1], 't', 'closed')
            ended[#ended + 1] = {id, f[1], 't', 'closed', redis.call('SMEMBERS', tag .. 'sc:' .. id)}
          end
        end
        local unfinished = {}
        if endsDue == 1 then
          for _, id in ipairs(redis.call('ZRANGEBYSCORE', ending, '-inf', now - timeout, 'LIMIT', 0, limit)) do
            local f = redis.call('HMGET', tag .. 'end:' .. id, 'user', 'kind', 'how')
            if not f[1] then
              redis.call('ZREM', ending, id)
            else
              redis.call('ZADD', ending, now, id)
              unfinished[#unfinished + 1] = {id, f[1], f[2], f[3], redis.call('SMEMBERS', tag .. 'sc:' .. id)}
            end
          end
        end
        return {ended, unfinished, orphaned}
        """)

    /// The scanner refenced the channels of the sessions named (the rest) that ``reapGroup``
    /// logged in `log` (`P{<g>}rf:<node>`): they leave the log.
    static let refenced = LuaScript("session.refenced", parameters: [.key("log")], rest: "ids", body: """
        for i = ids, #ARGV do redis.call('SREM', log, ARGV[i]) end
        return 'ok'
        """)

    /// The reaper's last step, on the control slot: the nodes named (the rest) leave
    /// `P{0}reaping` (declared, `reaping`) once every key group answered ``reapGroup`` for them.
    static let reaped = LuaScript("session.reaped", parameters: [.key("reaping"), .text("prefix")], rest: "nodes", body: """
        for i = nodes, #ARGV do
          redis.call('SREM', reaping, ARGV[i])
          redis.call('HDEL', string.sub(reaping, 1, #reaping - #'reaping') .. 'deaths', ARGV[i])
        end
        return 'ok'
        """)

    /// SIGTERM, or a node that starts with the id of an earlier run: the sessions of `node` in
    /// one key group (`sessions`, its `P{<g>}ns:<node>`, declared) become held with no node,
    /// resumable anywhere. A node calls it once per group. Returns `{'ok', orphaned}`
    /// (``orphan``'s list: the channels to refence with more than one group). `forgetTokens` 1:
    /// a registration after Redis lost data or went back in time: held, they time out, and
    /// their tokens no longer resume.
    static let handOver = LuaScript("session.handOver", parameters: [.key("sessions"), .text("prefix"), .text("node"), .number("groups"),
                                                                     .number("forgetTokens")],
                                    library: library, body: """
        return {'ok', orphan(string.sub(sessions, 1, #sessions - #('ns:' .. node)), node, {}, nil, nil, forgetTokens == 1)}
        """)

    /// The helpers every session script runs after its parameters (`now`, `markHeld`,
    /// `markLive`, `forget`, `orphan`, and ``SessionScriptKeys``'; every script has a `prefix`
    /// parameter); the start check (`ClusterStartCheck`) uses them too.
    package static let library = KeyGroups.luaChannelBaseOfOneGroup + SessionScriptKeys.library + KeptMessageScripts.library + """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

        local function userSessions(tag, user) return tag .. 'us:' .. #user .. ':' .. user end
        -- Fencing: a node the others declared dead (taken out of `nodes`) starts and claims
        -- nothing until its heartbeat has told it so and put it back.
        local function isLive(node) return redis.call('ZSCORE', control .. 'nodes', node) ~= false end
        -- The same test in the slot of a user's key group `tag`: with one group, `isLive`; with
        -- more (`P{0}nodes` is another slot), no fence mark of the node there newer than
        -- `liveAt`, Redis' time of the node's latest beat that found it live (the reaper marks
        -- each group as it orphans a dead node's sessions there, ``reapGroup``: a session
        -- started before the mark is orphaned with the rest, one after it is refused; a node
        -- revived after its death beats live later than the mark).
        local function isLiveHere(tag, node, liveAt)
          if groups <= 1 then return isLive(node) end
          local death = redis.call('GET', tag .. 'fence:' .. node)
          return not death or tonumber(death) < liveAt
        end

        -- A held session's `message` events are kept by each channel (``KeptMessageScripts``;
        -- the publish script appends them); it no longer counts among a channel's live message sessions. Its fence
        -- copy in each channel becomes `owner` (nil: unchanged). In this script with one key
        -- group (the channels share the session's slot); with more, the node sends each
        -- channel `presence.refence` after the answer (docs/cluster.md, step 1).
        local function refenceChannels(id, tag, owner, held)
          if groups > 1 then return end
          for _, channel in ipairs(redis.call('SMEMBERS', tag .. 'sc:' .. id)) do
            local base = channelBaseOf(channel)
            local flags = redis.call('HGET', base .. ':s', id)
            if flags then
              if owner then redis.call('HSET', base .. ':o', id, owner) end
              if string.find(flags, 'm', 1, true) then
                if held then
                  if redis.call('SADD', base .. ':hm', id) == 1 then redis.call('HINCRBY', base, 'ml', -1) end
                elseif redis.call('SREM', base .. ':hm', id) == 1 then
                  redis.call('HINCRBY', base, 'ml', 1)
                end
              end
            end
          end
        end

        local function markHeld(id, tag, owner) refenceChannels(id, tag, owner, true) end
        local function markLive(id, tag, owner) refenceChannels(id, tag, owner, false) end

        local function forget(tag, id, user, node, token)
          -- What each channel kept for it goes with the leave of each channel that follows.
          redis.call('DEL', tag .. 'hm:' .. id, tag .. 'hmd:' .. id, tag .. 'hmc:' .. id)
          redis.call('DEL', tag .. 's:' .. id)
          redis.call('ZREM', userSessions(tag, user), id)
          redis.call('DEL', tag .. 'tok:' .. token)
          redis.call('ZREM', tag .. 'held', id)
          if node ~= '' then redis.call('SREM', tag .. 'ns:' .. node, id) end
        end

        -- A session gone from Redis whose channels and user status are still to follow: its
        -- node does that next and `status.ended` takes it off `P{<g>}ending`; should the node
        -- die first, a reaper finishes it (`session.reapGroup`).
        local function markEnding(tag, id, user, kind, how)
          redis.call('ZADD', tag .. 'ending', now, id)
          redis.call('HSET', tag .. 'end:' .. id, 'user', user, 'kind', kind, 'how', how)
        end

        -- The sessions of `node` in the key group of `tag` (`P{<g>}ns:<node>`) become held with
        -- no node: a live one from now, a held one keeps its deadline; their fence copies
        -- become `''`. With more than one key group, each session is added to `out` as
        -- {entry, its channels}: the node refences them; or, given a `log` key, its id is
        -- added to that set instead (the reaper's, ``reapGroup``).
        -- `forgetTokens`: after Redis lost data or went back in time (a registration again),
        -- the sessions' resume tokens go too: what Redis still has of them is a part of what
        -- their clients were told, so a resume would bring back a half state (channels of a
        -- lost key group no longer listing the member); their clients log in again (PROTOCOL §9).
        local function orphan(tag, node, out, log, diedAt, forgetTokens)
          for _, id in ipairs(redis.call('SMEMBERS', tag .. 'ns:' .. node)) do
            local key = tag .. 's:' .. id
            -- When the node took it (`since`: a claim; else its start). A reaper's call that
            -- names a node dead at `diedAt` leaves the sessions it took after that alone: it
            -- revived since, and this call was sent before it left `P{0}reaping` (a
            -- `reapGroup` in flight to another master than the control slot's; chaos seed
            -- 180312804218481 saw a session claimed on the revived node orphaned behind its
            -- back, then timed out).
            local took = tonumber(redis.call('HGET', key, 'since') or redis.call('HGET', key, 'started') or '0')
            if redis.call('EXISTS', key) == 0 then
              redis.call('SREM', tag .. 'ns:' .. node, id)
            elseif not diedAt or took <= diedAt then
              local held = tonumber(redis.call('HGET', key, 'heldUntil') or '0')
              if held == 0 then held = now + tonumber(redis.call('HGET', key, 'timeout') or '0') end
              markHeld(id, tag, '')
              if forgetTokens then
                -- The record keeps its `token` field (its end deletes `tok:<token>`, gone here).
                local token = redis.call('HGET', key, 'token')
                if token then redis.call('DEL', tag .. 'tok:' .. token) end
              end
              if log then
                redis.call('SADD', log, id)
              elseif groups > 1 then
                out[#out + 1] = {entryOf(tag, id), redis.call('SMEMBERS', tag .. 'sc:' .. id)}
              end
              redis.call('HSET', key, 'node', '', 'heldUntil', held)
              redis.call('ZADD', tag .. 'held', held, id)
              redis.call('SREM', tag .. 'ns:' .. node, id)
            end
          end
          return out
        end

        """
}
