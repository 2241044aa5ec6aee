import RollcallCore

/// The session scripts (``SessionScripts``) as Swift calls: each function passes a script's
/// arguments by the names its parameter list gives them (`prefix` first). Their replies are decoded in `SessionScriptReplies.swift`.
extension SessionScripts {
    /// What a session's end does to its channel memberships (`session.end`'s `kind`).
    enum EndKind: String {
        /// The hold ran out: each channel shows `timeout`.
        case timeout = "t"
        /// Any other end: each channel shows `leave`.
        case leave = "l"
    }

    /// `session.start`: records session `id` of `user` on `node` (its record `record`,
    /// ``ClusterKeys/SessionKeys/record``), with its presence timeout and resume token hash,
    /// ending the user's oldest sessions over `maxSessionsPerUser`. `groups`: the key group
    /// count; `liveAt`: Redis' time of the node's latest beat that found it live (read with
    /// more than one group, ``StoreBeat``).
    static func start(prefix: String, record: String, id: String, user: Name, platform: String, node: String, presenceTimeoutMs: Int64,
                      tokenHash: String, maxSessionsPerUser: Int, groups: Int, liveAt: Int64) -> StoreCommand {
        start.command([
            "record": record, "prefix": prefix, "id": id, "user": user.string, "platform": platform, "node": node, "timeout": presenceTimeoutMs,
            "token": tokenHash, "max": maxSessionsPerUser, "groups": groups, "liveAt": liveAt,
        ])
    }

    /// `session.hold`: `node`'s session `session` lost its connection and is held.
    /// `groups`: the key group count (more than one: the node refences the channels itself).
    static func hold(prefix: String, session: ClusterKeys.SessionKeys, node: String, groups: Int) -> StoreCommand {
        hold.command(["record": session.record, "held": session.heldSessions, "prefix": prefix, "id": session.id, "node": node,
                      "groups": groups])
    }

    /// `session.keepHeard`: `node` hands Redis the messages it kept for its held session `id`
    /// (its record `record`) before the hold ran there (oldest first; `dropped` did not fit),
    /// ahead of Redis' own, within `limit` bytes.
    static func keepHeard(prefix: String, record: String, id: String, node: String, limit: Int, dropped: Int,
                          heard: [[UInt8]]) -> StoreCommand {
        keepHeard.command(["record": record, "prefix": prefix, "id": id, "node": node, "limit": limit, "dropped": dropped], rest: heard)
    }

    /// `session.claim`: the session of `user` whose resume token hashes to `tokenHash` moves
    /// to `node` (held, or live on a node silent for `staleMs`), with `newTokenHash`; what it
    /// hands over stays in Redis for `markMs`, should the claim be cancelled. With more than
    /// one key group the node's liveness comes from `beat`, its latest beat (none yet: refused
    /// where the node was ever marked dead, and every owner taken for live).
    static func claim(prefix: String, tokenHash: String, user: Name, keys: ClusterKeys.UserKeys, node: String, newTokenHash: String,
                      staleMs: Int64, markMs: Int64, groups: Int, beat: StoreBeat?) -> StoreCommand {
        let ages = groups <= 1 ? [] : (beat?.beatAges ?? [:]).sorted { $0.key < $1.key }.flatMap { [Array($0.key.utf8), Array(String($0.value).utf8)] }
        return claim.command(["tokenKey": keys.token(tokenHash), "newTokenKey": keys.token(newTokenHash), "cancelMark": keys.claimCancel(newTokenHash),
                              "prefix": prefix, "token": tokenHash, "user": user.string, "node": node, "newToken": newTokenHash,
                              "staleMs": staleMs, "markMs": markMs, "groups": groups, "liveAt": beat?.liveAt ?? 0],
                             rest: ages)
    }

    /// `session.cancelClaim`: the claim `node` made with `newTokenHash` (from `tokenHash`) is
    /// void — undone if it ran, refused for `markMs` if it runs later.
    static func cancelClaim(prefix: String, user: ClusterKeys.UserKeys, tokenHash: String, newTokenHash: String, node: String,
                            markMs: Int64, groups: Int) -> StoreCommand {
        cancelClaim.command(["tokenKey": user.token(tokenHash), "newTokenKey": user.token(newTokenHash), "cancelMark": user.claimCancel(newTokenHash),
                             "prefix": prefix, "token": tokenHash, "newToken": newTokenHash, "node": node, "markMs": markMs,
                             "groups": groups])
    }

    /// `session.cancelStart`: the `session.start` of session `session` on `node` is void —
    /// the session ended if it ran, refused for `markMs` if it runs later. `groups`: the key
    /// group count.
    static func cancelStart(prefix: String, session: ClusterKeys.SessionKeys, node: String, markMs: Int64, groups: Int) -> StoreCommand {
        cancelStart.command(["record": session.record, "held": session.heldSessions, "ending": session.endingSessions, "prefix": prefix,
                             "id": session.id, "node": node, "markMs": markMs, "groups": groups])
    }

    /// `session.end`: session `session` (owned by `node`) ends for good, `kind` for its channels;
    /// `loggedOut` says whether the user logged out (else the connection closed); `tokenHash`:
    /// the resume token's hash the node knew for it, so that an end sent late does not end a
    /// resumed session (nil: any).
    static func end(prefix: String, session: ClusterKeys.SessionKeys, node: String, kind: EndKind, loggedOut: Bool,
                    tokenHash: String? = nil) -> StoreCommand {
        end.command(["record": session.record, "held": session.heldSessions, "ending": session.endingSessions, "prefix": prefix, "id": session.id, "node": node, "kind": kind.rawValue, "how": loggedOut ? "logout" : "closed",
                     "token": tokenHash ?? ""])
    }

    /// `session.declareDead`: as node `node`, declares nodes silent for `nodeTimeoutMs` dead
    /// (``ClusterKeys/meta`` declared) and, with `scannerLeaseMs` > 0, takes or keeps the
    /// scanner's lease — or, `releasing`, gives it up (its reads of the groups failed).
    static func declareDead(prefix: String, node: String, nodeTimeoutMs: Int64, scannerLeaseMs: Int64, releasing: Bool,
                            subscriptions: Int? = nil) -> StoreCommand {
        declareDead.command(["meta": ClusterKeys.controlTag(prefix: prefix) + "meta", "prefix": prefix, "self": node,
                             "timeout": nodeTimeoutMs, "leaseMs": scannerLeaseMs, "release": releasing ? 1 : 0,
                             "subscriptions": subscriptions ?? -1])
    }

    /// `session.reapGroup`: in key group `group` of `keys`, orphans the sessions of `reaping`
    /// (each node with when it was declared dead, which marks it there with more than one
    /// group), then ends up to `batch` sessions whose hold ran out and (with `endsDue`) hands
    /// out up to `batch` ends left unfinished for `nodeTimeoutMs`.
    static func reapGroup(keys: ClusterKeys, group: Int, reaping: [DeclareDeadScriptReply.Reaping], nodeTimeoutMs: Int64, batch: Int,
                          endsDue: Bool) -> StoreCommand {
        reapGroup.command(["held": keys.heldSessions(group: group), "ending": keys.endingSessions(group: group), "prefix": keys.prefix,
                           "timeout": nodeTimeoutMs, "limit": batch, "endsDue": endsDue ? 1 : 0, "groups": keys.groups.count],
                          rest: reaping.flatMap { [Array($0.node.utf8), Array(String($0.declaredDeadAt).utf8)] })
    }

    /// `session.refenced`: the channels of `sessionIds`, sessions of the dead `node` orphaned in
    /// key group `group`, are refenced: they leave the group's log of `node`.
    static func refenced(keys: ClusterKeys, group: Int, node: String, sessionIds: [String]) -> StoreCommand {
        refenced.command(["log": keys.refenceLog(of: node, group: group)], rest: sessionIds.map { Array($0.utf8) })
    }

    /// `session.reaped`: the nodes `reaped` leave `P{0}reaping`, every group having orphaned their sessions.
    static func reaped(prefix: String, nodes reaped: [String]) -> StoreCommand {
        self.reaped.command(["reaping": ClusterKeys.controlTag(prefix: prefix) + "reaping", "prefix": prefix],
                            rest: reaped.map { Array($0.utf8) })
    }

    /// `session.handOver`: every session of `node` in key group `group` becomes held with no node.
    static func handOver(keys: ClusterKeys, group: Int, node: String, forgettingTokens: Bool = false) -> StoreCommand {
        handOver.command(["sessions": keys.nodeSessions(of: node, group: group), "prefix": keys.prefix, "node": node,
                           "groups": keys.groups.count, "forgetTokens": forgettingTokens ? 1 : 0])
    }
}
