import RollcallCore

/// The two halves of a membership change whose session's record is in another key group than
/// the channel (docs/cluster.md, "Where the build stands", step 1): the user's side
/// (`presence.userSide`, on the user's slot) and the fence copy a claim, a hold or an
/// orphaning sends each joined channel (`presence.refence`, on the channel's slot).
extension PresenceScripts {
    /// The user's side of a join, a leave or a state change, on the user's slot. `op`:
    /// `c` checks that `node` owns the session (`{'ok'}` or `{'fenced'}`); `j` checks it too,
    /// then adds the channel to the session's and the user's channels (before the channel's
    /// join, which writes the fence copy); `l` takes it off the session's channels, `L` off the
    /// user's channels too (after the channel's leave: the user left the channel). Every write
    /// is an idempotent set operation, so a step sent twice changes nothing more.
    static let userSide = LuaScript("presence.userSide", parameters: [
        .key("sessionRecord"), .text("node"), .text("op"), .text("sessionChannels"), .text("userChannels"), .text("channelId"),
    ], body: """
        if op == 'c' or op == 'j' then
          if redis.call('HGET', sessionRecord, 'node') ~= node then return {'fenced'} end
        end
        if op == 'j' then
          redis.call('SADD', sessionChannels, channelId)
          redis.call('ZADD', userChannels, 0, channelId)
        elseif op == 'l' or op == 'L' then
          redis.call('SREM', sessionChannels, channelId)
          if op == 'L' then redis.call('ZREM', userChannels, channelId) end
        end
        return {'ok'}
        """)

    /// A session's fence copy in one channel it joined, after a claim, a hold or an orphaning
    /// changed who owns it: `owner` (`''`: held with no node) becomes the copy, and `held` (1:
    /// held, 0: live) its place among the channel's live message sessions (`:hm`, `ml`), as
    /// the session scripts' `markHeld`/`markLive` do on one group. A claim's refence (`claim`:
    /// its new token's hash) also takes the messages the channel kept for the session
    /// (``KeptMessageScripts``, kept `markMs` in case the claim is made void); the refence
    /// after a void claim (`restore`: that claim's hash) puts them back. Returns `{'notin'}`
    /// (it left the channel meanwhile: nothing to fence), or `{'ok', flags, message number,
    /// kept entries, dropped}`: its join flags and the channel's `mq`, what a claim answers.
    /// With `from` set (every refence but a claim's) it changes nothing where the copy names
    /// another node than `from` and `owner` (`{'moved'}`): a claim elsewhere came first, and
    /// this refence, late or sent again, must not take the session back from its new node.
    /// Idempotent, but for the take, which a claim sends once.
    static let refence = LuaScript("presence.refence", parameters: [
        .key("channelBase"), .text("session"), .text("owner"), .number("held"), .text("claim"), .text("restore"), .number("markMs"),
        .text("from"),
    ], library: KeptMessageScripts.library, body: """
        local flags = redis.call('HGET', channelBase .. ':s', session)
        if not flags then return {'notin'} end
        local copy = redis.call('HGET', channelBase .. ':o', session)
        if from ~= '' and copy and copy ~= from and copy ~= owner then return {'moved'} end
        redis.call('HSET', channelBase .. ':o', session, owner)
        local entries, dropped = {}, 0
        if string.find(flags, 'm', 1, true) then
          if held == 1 then
            if redis.call('SADD', channelBase .. ':hm', session) == 1 then redis.call('HINCRBY', channelBase, 'ml', -1) end
          elseif redis.call('SREM', channelBase .. ':hm', session) == 1 then
            redis.call('HINCRBY', channelBase, 'ml', 1)
          end
          if restore ~= '' then restoreKept(channelBase, session, restore) end
          if claim ~= '' then entries, dropped = takeKept(channelBase, session, claim, markMs) end
        end
        return {'ok', flags, tonumber(redis.call('HGET', channelBase, 'mq') or '0'), entries, dropped}
        """)

    /// What `presence.userSide` does (``userSide``).
    enum UserSideStep: String {
        /// Checks that the node owns the session.
        case check = "c"
        /// Checks it, then adds the channel to the session's and the user's channels.
        case join = "j"
        /// Takes the channel off the session's channels.
        case leaveSession = "l"
        /// Takes the channel off the session's and the user's channels.
        case leaveUser = "L"
    }

    /// `presence.userSide`: `step` for `indexes`' session (record `sessionRecord`) and channel,
    /// `node` the one that must own it (checks only).
    static func userSide(_ step: UserSideStep, sessionRecord: String, node: String, indexes: MembershipIndexes,
                         channelId: String) -> StoreCommand {
        userSide.command(["sessionRecord": sessionRecord, "node": node, "op": step.rawValue,
                          "sessionChannels": indexes.sessionChannels, "userChannels": indexes.userChannels, "channelId": channelId])
    }

    /// What a `presence.refence` does with the messages the channel kept for the session.
    enum KeptMessagesStep {
        /// Nothing.
        case leave
        /// A claim (its new token's hash) takes them, kept `markMs` for a cancel.
        case take(claim: String, markMs: Int64)
        /// The claim (its new token's hash) was made void: what it took goes back.
        case restore(claim: String)
    }

    /// `presence.refence`: `session`'s fence copy in the channel whose hash is `channelBase`
    /// becomes `owner` (`''`: none), held or live, unless it names another node than `from`
    /// (`''`: any; a claim's); `kept` says what happens to the messages the channel kept for it.
    static func refence(channelBase: String, session: String, owner: String, held: Bool, from: String,
                        kept: KeptMessagesStep = .leave) -> StoreCommand {
        var (claim, restore, markMs) = ("", "", Int64(0))
        switch kept {
        case .leave: break
        case .take(let hash, let ms): (claim, markMs) = (hash, ms)
        case .restore(let hash): restore = hash
        }
        return refence.command(["channelBase": channelBase, "session": session, "owner": owner, "held": held,
                                "claim": claim, "restore": restore, "markMs": markMs, "from": from])
    }
}
