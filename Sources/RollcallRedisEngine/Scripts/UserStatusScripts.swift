import RollcallCore

/// The Lua scripts of user status in cluster mode (docs/cluster.md, "User status across
/// nodes"). Every script takes `prefix` (`cluster.keyPrefix`) and `groups` (the key group
/// count, ``KeyGroups``); times are Redis' (`TIME`, ms). Names in keys are length-prefixed
/// (`<bytes>:<name>`, as ``ClusterKeys``). Every key of a user is under its key group's tag
/// `P{<g>}` (`userTag(user)`, ``SessionScriptKeys``); a script about one user declares one key
/// of that user (`status` or `expiries`), so that Redis Cluster routes it to the user's slot,
/// and the buckets of its group it writes (`customExpiries`, `subscriptionIndex`, `ending`;
/// the library's helpers name the same keys from the user's tag, as the sweep calls them for
/// every group):
///
/// - `P{<g>}st:<n>:<user>` hash: `status`, `cs` (the custom status, raw UTF-8), `csx` (its expiry),
///   `lu`, `lo`, `lc` (the record's three times), `le` (end of the user's latest session), `pf`
///   (platforms last announced, comma-separated);
/// - `P{<g>}sub:<n>:<subscriber>` zset target → createdAt (age order for `maxSubscriptionsPerUser`),
///   `P{<g>}subx:<n>:<subscriber>` zset target → expiresAt, `P{<g>}subr:<n>:<target>` zset
///   subscriber → expiresAt (`maxSubscribersPerUser`, who to tell);
/// - the buckets `P{<g>}csx` zset user → custom status expiry (the users of group `g`),
///   `P{<g>}subexp` zset `<n>:<subscriber><target>` → expiresAt (the subscribers of group
///   `g`): what the sweep (every node's reaper tick) expires, reading every group's;
/// - pub/sub `P{<g>}uu:<n>:<user>`: the user's inbox (``ClusterKeys/inbox(of:)``), heard by
///   every node with a session of the user. No script publishes to it.
///
/// Scripts that can change a record answer `{result, announced changes}`: per change
/// `{payload, user, subscribers…}`, which the node publishes to the inbox of the user and of
/// each subscriber right after the answer (``ClusterUserStatus/unwrapped(_:)``,
/// docs/cluster.md "Delivery"). A record goes back to Swift as fields (`{user, status, lu, lo,
/// lc, platforms, customStatus or nil}`) and into an inbox as `U<except session>\n<version>\n
/// <user>\n<status>\n<lu>\n<lo>\n<lc>\n<platforms>\n<-, or = and the custom status>`: the node
/// drops a version it has seen in that inbox, or an older one, and encodes the rest with the
/// one-node encoder,
/// so every record has the same bytes as on one node. Platforms come from the user's sessions
/// in Redis (`P{<g>}us:`, `P{<g>}s:<id>` `platform`), live and held.
enum UserStatusScripts {
    /// A new session (run right after `session.start`, in the same call), with the login's
    /// custom status (`custom`: `-` none, `=text`) and its TTL. Returns the catch-up
    /// (``CatchUp``): subscribed targets changed after the user's latest session end (none when
    /// no session of the user ever ended); nothing, and no change, when `session.start`
    /// recorded no session (the node was fenced).
    static let started = LuaScript("status.started", parameters: [
        .key("status"), .key("customExpiries"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("user"), .text("session"),
        .text("custom"), .number("ttl"),
    ], library: library, body: """
        -- `session.start` refused a fenced node: no session, so no change to the user either.
        if redis.call('EXISTS', userTag(user) .. 's:' .. session) == 0 then return {{}, {}} end
        expireCustom(user)
        local key = status
        local f = redis.call('HMGET', key, 'status', 'cs', 'pf', 'le')
        local changed = false
        if f[1] ~= 'online' then
          redis.call('HSET', key, 'status', 'online', 'lo', int(now))
          changed = true
        end
        local text = string.sub(custom, 2)
        if custom ~= '-' and text ~= '' and text ~= f[2] then
          setCustom(user, text, ttl)
          changed = true
        end
        local pf = platformsOf(user)
        if pf ~= (f[3] or '') then
          redis.call('HSET', key, 'pf', pf)
          changed = true
        end
        if changed then
          redis.call('HSET', key, 'lu', int(now))
          announce(user, session)
        end
        local records = {}
        if f[4] then records = catchUp(user, tonumber(f[4])) end
        return {records, announced}
        """)

    /// A held session resumed (here or on another node), with the login's custom status and
    /// its TTL. Returns the catch-up (``CatchUp``: targets changed within `window` ms).
    static let resumed = LuaScript("status.resumed", parameters: [
        .key("status"), .key("customExpiries"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("user"), .text("session"),
        .text("custom"), .number("ttl"), .number("window"),
    ], library: library, body: """
        expireCustom(user)
        local key = status
        local text = string.sub(custom, 2)
        if custom ~= '-' and text ~= '' and redis.call('EXISTS', key) == 1 and text ~= redis.call('HGET', key, 'cs') then
          setCustom(user, text, ttl)
          redis.call('HSET', key, 'lu', int(now))
          announce(user, session)
        end
        return {catchUp(user, now - window), announced}
        """)

    /// A session ended (after `session.end` or the reaper forgot it; a session still in Redis
    /// was taken over, and nothing changes). `how`: `logout` or `closed`; `clear`:
    /// clearCustomStatusOnOffline (`1`/`0`). The last session: `loggedOut` after
    /// logout, else `offline`; otherwise the platforms may change. The end is finished: it
    /// leaves its group's `P{<g>}ending` (`SessionScripts.end`).
    static let ended = LuaScript("status.ended", parameters: [
        .key("status"), .key("customExpiries"), .key("ending"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("user"),
        .text("session"), .text("how"), .text("clear"),
    ], library: library, body: """
        local tag = userTag(user)
        if redis.call('EXISTS', tag .. 's:' .. session) == 1 then return {'live', announced} end
        redis.call('ZREM', ending, session)
        redis.call('DEL', tag .. 'end:' .. session)
        expireCustom(user)
        local key = status
        redis.call('HSET', key, 'le', int(now))
        local changed = false
        if redis.call('ZCARD', usKey(user)) == 0 then
          redis.call('HDEL', key, 'pf')
          local status = how == 'logout' and 'loggedOut' or 'offline'
          if redis.call('HGET', key, 'status') ~= status then
            redis.call('HSET', key, 'status', status, 'lo', int(now))
            changed = true
          end
          if clear == '1' and redis.call('HEXISTS', key, 'cs') == 1 then
            setCustom(user, false, 0)
            changed = true
          end
        else
          local pf = platformsOf(user)
          if pf ~= (redis.call('HGET', key, 'pf') or '') then
            redis.call('HSET', key, 'pf', pf)
            changed = true
          end
        end
        if changed then
          redis.call('HSET', key, 'lu', int(now))
          announce(user, '')
        end
        return {'ok', announced}
        """)

    /// `setCustomStatus`: `custom` is `-` (clear) or `=text`, for `ttl` ms. Setting the
    /// current value again changes nothing. Returns the user's record.
    static let setCustomStatus = LuaScript("status.setCustom", parameters: [
        .key("status"), .key("customExpiries"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("user"), .text("session"),
        .text("custom"), .number("ttl"),
    ], library: library, body: """
        expireCustom(user)
        local key = status
        local wanted = string.sub(custom, 2)
        if custom == '-' or wanted == '' then wanted = false end
        if wanted ~= redis.call('HGET', key, 'cs') then
          if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'status', 'online') end
          setCustom(user, wanted, ttl)
          redis.call('HSET', key, 'lu', int(now))
          announce(user, session)
        end
        return {record(user), announced}
        """)

    /// `getUserStatus` (and the records of `getSubscriptions`), for the users (the rest), all
    /// of one key group: `anyUsersStatus` is one of their `st:` keys, declared so that Redis
    /// Cluster routes the call to the group's slot. Returns one record per user, in order.
    static let records = LuaScript("status.records", parameters: [.key("anyUsersStatus"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream")], rest: "usersFrom",
                                   library: library, body: """
        local out = {}
        for i = usersFrom, #ARGV do out[#out + 1] = current(ARGV[i]) end
        return {out, announced}
        """)

    /// The second step of a catch-up over several key groups (``catchUp``'s `=since` answer):
    /// the records of the targets (the rest, all of one key group: `anyTargetsStatus` is one
    /// of their `st:` keys, declared so that Redis Cluster routes the call to the group's
    /// slot) changed after `since`.
    static let changedSince = LuaScript("status.changedSince", parameters: [
        .key("anyTargetsStatus"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .number("since"),
    ], rest: "targetsFrom", library: library, body: """
        local targets = {}
        for i = targetsFrom, #ARGV do targets[#targets + 1] = ARGV[i] end
        return {recordsChangedSince(targets, since), announced}
        """)

    /// `subscribeUserStatus` with one key group (every target's keys in `me`'s slot; over
    /// several: ``admit``, then ``subscribeAdmitted``): subscriber `me`, for `duration` ms, within
    /// maxSubscriptionsPerUser and maxSubscribersPerUser, to the targets (the rest; never the
    /// subscriber). Returns per target a code (`a` added, `r` renewed, `l` TARGET_SUBSCRIBER_LIMIT) and its
    /// record (nil for `l`), then the targets the cap dropped, earliest-made first.
    static let subscribe = LuaScript("status.subscribe", parameters: [
        .key("expiries"), .key("subscriptionIndex"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("me"), .number("duration"), .number("maxSubs"), .number("maxSubscribers"),
    ], rest: "targetsFrom", library: library, body: """
        dropExpired(me)
        local expiresAt = now + duration
        local codes, records = {}, {}
        for i = targetsFrom, #ARGV do
          local target = ARGV[i]
          if redis.call('ZSCORE', subKey(me), target) then
            track(me, target, expiresAt)
            codes[#codes + 1] = 'r'
            records[#records + 1] = current(target)
          else
            redis.call('ZREMRANGEBYSCORE', subrKey(target), '-inf', now)
            if redis.call('ZCARD', subrKey(target)) >= maxSubscribers then
              codes[#codes + 1] = 'l'
              records[#records + 1] = false
            else
              addSubscription(me, target)
              track(me, target, expiresAt)
              codes[#codes + 1] = 'a'
              records[#records + 1] = current(target)
            end
          end
        end
        local evicted = evictOverCap(me, maxSubs)
        return {{codes, records, evicted}, announced}
        """)

    /// `subscribeUserStatus` over several key groups, first step, on the slot of one group's
    /// targets (the rest; `anyTargetsStatus` is one of their `st:` keys): each target takes
    /// subscriber `me` until now + `duration` unless it has `maxSubscribers` others
    /// (``subscribe``'s limit, checked atomically with the add on the target's slot). Returns
    /// per target a code (`ok`, or `l` TARGET_SUBSCRIBER_LIMIT) and its record (nil for `l`).
    static let admit = LuaScript("status.admit", parameters: [
        .key("anyTargetsStatus"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .text("me"), .number("duration"),
        .number("maxSubscribers"),
    ], rest: "targetsFrom", library: library, body: """
        local codes, records = {}, {}
        for i = targetsFrom, #ARGV do
          local target = ARGV[i]
          redis.call('ZREMRANGEBYSCORE', subrKey(target), '-inf', now)
          if redis.call('ZSCORE', subrKey(target), me) or redis.call('ZCARD', subrKey(target)) < maxSubscribers then
            redis.call('ZADD', subrKey(target), int(now + duration), me)
            codes[#codes + 1] = 'ok'
            records[#records + 1] = current(target)
          else
            codes[#codes + 1] = 'l'
            records[#records + 1] = false
          end
        end
        return {{codes, records}, announced}
        """)

    /// `subscribeUserStatus` over several key groups, second step, on `me`'s slot: the targets
    /// `status.admit` took (the rest) become (`a`) or stay (`r`) subscriptions of `me` for
    /// `duration` ms, within maxSubscriptionsPerUser. Returns ``subscribe``'s shape with no
    /// records: `{codes, {}, evicted}` (the node drops `me` from the evicted targets' side).
    static let subscribeAdmitted = LuaScript("status.subscribeAdmitted", parameters: [
        .key("expiries"), .key("subscriptionIndex"), .text("prefix"), .number("groups"), .text("hooks"), .text("me"), .number("duration"),
        .number("maxSubs"),
    ], rest: "targetsFrom", library: library, body: """
        dropExpired(me)
        local expiresAt = now + duration
        local codes = {}
        for i = targetsFrom, #ARGV do
          local target = ARGV[i]
          if redis.call('ZSCORE', subKey(me), target) then
            codes[#codes + 1] = 'r'
          else
            addSubscription(me, target)
            codes[#codes + 1] = 'a'
          end
          track(me, target, expiresAt)
        end
        local evicted = evictOverCap(me, maxSubs)
        return {{codes, {}, evicted}, announced}
        """)

    /// After `me` stopped subscribing to the targets (the rest, all of one key group other
    /// than me's; `anyTargetsStatus` is one of their `st:` keys): `me` leaves their
    /// subscribers (`subr:`). Idempotent. Returns how many it was still in.
    static let dropSubscriber = LuaScript("status.dropSubscriber", parameters: [
        .key("anyTargetsStatus"), .text("prefix"), .number("groups"), .text("hooks"), .text("me"),
    ], rest: "targetsFrom", library: library, body: """
        local dropped = 0
        for i = targetsFrom, #ARGV do dropped = dropped + redis.call('ZREM', subrKey(ARGV[i]), me) end
        return dropped
        """)

    /// `unsubscribeUserStatus`: subscriber `me`, every subscription when `all` is `1`, else the
    /// targets (the rest). Returns the targets that were subscribed and are not any more.
    static let unsubscribe = LuaScript("status.unsubscribe", parameters: [
        .key("expiries"), .key("subscriptionIndex"), .text("prefix"), .number("groups"), .text("hooks"), .text("me"), .text("all"),
    ], rest: "targetsFrom", library: library, body: """
        dropExpired(me)
        local targets = {}
        if all == '1' then
          targets = redis.call('ZRANGE', subKey(me), 0, -1)
        else
          for i = targetsFrom, #ARGV do targets[#targets + 1] = ARGV[i] end
        end
        local removed = {}
        for _, target in ipairs(targets) do
          if redis.call('ZSCORE', subKey(me), target) then
            removeSubscription(me, target)
            removed[#removed + 1] = target
          end
        end
        return removed
        """)

    /// `getSubscriptions`, first step, for subscriber `me`. Returns the live
    /// subscriptions as target, expiresAt, target, expiresAt….
    static let subscriptions = LuaScript("status.subscriptions", parameters: [
        .key("expiries"), .text("prefix"), .number("groups"), .text("hooks"), .text("me"),
    ], library: library, body: """
        return redis.call('ZRANGEBYSCORE', expiries, '(' .. now, '+inf', 'WITHSCORES')
        """)

    /// After this node's pub/sub link came back (inbox messages may have been lost): per user,
    /// the records a session of the user may have missed in the last `window` ms, for the users
    /// (the rest, all of one key group: `anyUsersStatus` is one of their `st:` keys). Returns
    /// per user `{its own record if it changed within the window, else false; the catch-up of
    /// its subscribed targets (``CatchUp``)}`.
    static let resync = LuaScript("status.resync", parameters: [.key("anyUsersStatus"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"), .number("window")], rest: "usersFrom",
                                  library: library, body: """
        local since = now - window
        local out = {}
        for i = usersFrom, #ARGV do
          local user = ARGV[i]
          expireCustom(user)
          local own = false
          if tonumber(redis.call('HGET', stKey(user), 'lu') or '0') > since then own = record(user) end
          out[#out + 1] = {own, catchUp(user, since)}
        end
        return {out, announced}
        """)

    /// The scanner's sweep of one key group (its slice of the groups each reaper tick, every
    /// group within a second; with one group, every node at every tick): the group's expired
    /// custom statuses are cleared (a change heard by subscribers and the user's sessions) and
    /// its subscribers' expired subscriptions dropped (silently; a target's side in another
    /// group expires by its own score). `limit`: the most of each to handle. Returns the
    /// group's subscriptions not expired yet (the node sums them: `rollcall_subscriptions`).
    /// Every key is the group's (`csx`, `subexp` and the users' keys, in its slot).
    static let sweep = LuaScript("status.sweep", parameters: [
        .key("customExpiries"), .key("subscriptionExpiries"), .text("prefix"), .number("groups"), .text("hooks"), .key("webhookStream"),
        .number("limit"),
    ], library: library, body: """
        for _, user in ipairs(redis.call('ZRANGEBYSCORE', customExpiries, '-inf', now, 'LIMIT', 0, limit)) do
          expireCustom(user)
        end
        for _, entry in ipairs(redis.call('ZRANGEBYSCORE', subscriptionExpiries, '-inf', now, 'LIMIT', 0, limit)) do
          local colon = string.find(entry, ':', 1, true)
          local count = tonumber(string.sub(entry, 1, colon - 1))
          local subscriber = string.sub(entry, colon + 1, colon + count)
          local target = string.sub(entry, colon + count + 1)
          local expiresAt = tonumber(redis.call('ZSCORE', subxKey(subscriber), target) or '0')
          if expiresAt > now then
            redis.call('ZADD', subscriptionExpiries, int(expiresAt), entry)
          else
            removeSubscription(subscriber, target)
          end
        end
        return {redis.call('ZCOUNT', subscriptionExpiries, '(' .. int(now), '+inf'), announced}
        """)

    static let library = WebhookStreamScripts.writer + SessionScriptKeys.library + """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

        local function int(n) return string.format('%d', n) end
        local function named(name) return #name .. ':' .. name end
        local function stKey(user) return userTag(user) .. 'st:' .. named(user) end
        local function usKey(user) return userTag(user) .. 'us:' .. named(user) end
        local function subKey(user) return userTag(user) .. 'sub:' .. named(user) end
        local function subxKey(user) return userTag(user) .. 'subx:' .. named(user) end
        local function subrKey(user) return userTag(user) .. 'subr:' .. named(user) end

        -- Sorted, distinct platforms of the user's sessions (live and held), comma-separated.
        local function platformsOf(user)
          local seen, list, tag = {}, {}, userTag(user)
          for _, id in ipairs(redis.call('ZRANGE', tag .. 'us:' .. named(user), 0, -1)) do
            local platform = redis.call('HGET', tag .. 's:' .. id, 'platform')
            if platform and not seen[platform] then
              seen[platform] = true
              list[#list + 1] = platform
            end
          end
          table.sort(list)
          return table.concat(list, ',')
        end

        -- The record's fields: status, lu, lo, lc, platforms, custom status (false: none).
        local function fields(user)
          local f = redis.call('HMGET', stKey(user), 'status', 'lu', 'lo', 'lc', 'cs')
          return {f[1] or 'loggedOut', tonumber(f[2] or '0'), tonumber(f[3] or '0'), tonumber(f[4] or '0'), platformsOf(user), f[5]}
        end

        -- The record's fields, then its version (`v`: what a node compares inbox records with).
        local function record(user)
          local f = fields(user)
          return {user, f[1], f[2], f[3], f[4], f[5], f[6], tonumber(redis.call('HGET', stKey(user), 'v') or '0')}
        end

        -- The changes this script made, returned with its answer: per change `{payload, user,
        -- subscribers…}`. The node that ran it publishes the payload to the inbox of the user
        -- and of each subscriber, right after the answer (a script publishes to no inbox: on
        -- Redis Cluster those are shard channels of other slots).
        local announced = {}

        -- Tells the user's sessions (but `except`) and every live subscriber (through the node).
        local function announce(user, except)
          local f = fields(user)
          local fieldsText = user .. '\\n' .. f[1] .. '\\n' .. int(f[2]) .. '\\n' .. int(f[3]) .. '\\n' ..
            int(f[4]) .. '\\n' .. f[5] .. '\\n' .. (f[6] and ('=' .. f[6]) or '-')
          -- The record's version steps with every change (1.2); its webhook event goes into the
          -- stream here, with the change (WebhookStreamScripts). A node drops a record of a
          -- version it has seen, or older, in an inbox.
          local version = redis.call('HINCRBY', stKey(user), 'v', 1)
          -- Into the user's group's stream (declared by the scripts as `webhookStream`, so
          -- that the node's taker reads that group soon; the sweep names it itself).
          hookStream = userTag(user) .. 'wh'
          hook('u', fieldsText, 'v', version)
          local change = {'U' .. except .. '\\n' .. version .. '\\n' .. fieldsText, user}
          redis.call('ZREMRANGEBYSCORE', subrKey(user), '-inf', now)
          for _, subscriber in ipairs(redis.call('ZRANGE', subrKey(user), 0, -1)) do change[#change + 1] = subscriber end
          announced[#announced + 1] = change
        end

        -- Sets (text) or clears (false) the custom status, its time and its expiry.
        local function setCustom(user, text, ttl)
          local key = stKey(user)
          if text then
            redis.call('HSET', key, 'cs', text, 'csx', int(now + ttl), 'lc', int(now))
            redis.call('ZADD', userTag(user) .. 'csx', int(now + ttl), user)
          else
            redis.call('HDEL', key, 'cs', 'csx')
            redis.call('HSET', key, 'lc', int(now))
            redis.call('ZREM', userTag(user) .. 'csx', user)
          end
        end

        -- Clears the custom status if it expired (as of its expiry time) and announces it.
        local function expireCustom(user)
          local key = stKey(user)
          local expiresAt = tonumber(redis.call('HGET', key, 'csx') or '0')
          if expiresAt == 0 then
            redis.call('ZREM', userTag(user) .. 'csx', user)
            return
          end
          if expiresAt > now then return end
          local lu = tonumber(redis.call('HGET', key, 'lu') or '0')
          redis.call('HDEL', key, 'cs', 'csx')
          redis.call('HSET', key, 'lc', int(expiresAt), 'lu', int(math.max(lu, expiresAt)))
          redis.call('ZREM', userTag(user) .. 'csx', user)
          announce(user, '')
        end

        local function current(user)
          expireCustom(user)
          return record(user)
        end

        -- The expiry of subscription (me, target), in all three places it is kept. The
        -- target's side (`subr:`) only when it shares me's key group (always, with one group):
        -- else `status.admit` wrote it, on the target's slot.
        local function track(me, target, expiresAt)
          redis.call('ZADD', subxKey(me), int(expiresAt), target)
          if userTag(target) == userTag(me) then redis.call('ZADD', subrKey(target), int(expiresAt), me) end
          redis.call('ZADD', userTag(me) .. 'subexp', int(expiresAt), named(me) .. target)
        end

        -- Likewise: the target's side of another group is dropped by the node afterwards
        -- (`status.dropSubscriber`), or expires by its score.
        local function removeSubscription(me, target)
          redis.call('ZREM', subKey(me), target)
          redis.call('ZREM', subxKey(me), target)
          if userTag(target) == userTag(me) then redis.call('ZREM', subrKey(target), me) end
          redis.call('ZREM', userTag(me) .. 'subexp', named(me) .. target)
        end

        -- A new subscription of `me` to `target`, made after every other (createdAt orders
        -- them for maxSubscriptionsPerUser: ``evictOverCap``).
        local function addSubscription(me, target)
          local latest = redis.call('ZRANGE', subKey(me), -1, -1, 'WITHSCORES')
          local createdAt = now
          if latest[2] then createdAt = math.max(now, tonumber(latest[2]) + 1) end
          redis.call('ZADD', subKey(me), int(createdAt), target)
        end

        -- Drops `me`'s earliest-made subscriptions beyond `maxSubs`; returns their targets.
        local function evictOverCap(me, maxSubs)
          local evicted = {}
          while redis.call('ZCARD', subKey(me)) > maxSubs do
            local earliest = redis.call('ZRANGE', subKey(me), 0, 0)[1]
            removeSubscription(me, earliest)
            evicted[#evicted + 1] = earliest
          end
          return evicted
        end

        local function dropExpired(me)
          for _, target in ipairs(redis.call('ZRANGEBYSCORE', subxKey(me), '-inf', now)) do
            removeSubscription(me, target)
          end
        end

        -- Records of `targets` whose lastUpdateTime is after `since`.
        local function recordsChangedSince(targets, since)
          local out = {}
          for _, target in ipairs(targets) do
            expireCustom(target)
            if tonumber(redis.call('HGET', stKey(target), 'lu') or '0') > since then out[#out + 1] = record(target) end
          end
          return out
        end

        -- The catch-up of `user`: its live subscribed targets changed after `since`. With one
        -- key group they are read here; with more, a target's record may be in another
        -- group's slot, so the answer names them instead, `{'=since', since, target…}`, and
        -- the node reads them per group (`status.changedSince`).
        local function catchUp(user, since)
          local targets = redis.call('ZRANGEBYSCORE', subxKey(user), '(' .. now, '+inf')
          if groups <= 1 or #targets == 0 then return recordsChangedSince(targets, since) end
          local out = {'=since', int(since)}
          for _, target in ipairs(targets) do out[#out + 1] = target end
          return out
        end

        """
}
