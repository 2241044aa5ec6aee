import RollcallCore

/// The keys of users and their sessions (docs/cluster.md, "Keys"): every one under its user's
/// key group's tag `P{<g>}` (``KeyGroups``, `g` the group of `u:<n>:<user>`), so that a script
/// about one user and its sessions runs on one Redis Cluster slot, beside that group's buckets
/// of the cluster-wide session and user-status indexes (`P{<g>}held`, `P{<g>}ending`,
/// `P{<g>}csx`, `P{<g>}subexp`).
extension ClusterKeys {
    /// The keys of one user, all under its group's tag.
    struct UserKeys {
        /// `P{<g>}`: the tag of the user's key group.
        let group: String
        /// `<n>:<user>`: the user's name in its keys.
        let name: String

        /// `P{<g>}uc:<n>:<user>`: the channels the user is a member of (`getUserChannels`).
        var channels: String { group + "uc:" + name }
        /// `P{<g>}us:<n>:<user>`: the user's sessions by start time (`maxSessionsPerUser`).
        var sessions: String { group + "us:" + name }
        /// `P{<g>}st:<n>:<user>`: the user's status record.
        var status: String { group + "st:" + name }
        /// `P{<g>}sub:<n>:<user>`: the user's subscriptions, target → createdAt.
        var subscriptions: String { group + "sub:" + name }
        /// `P{<g>}subx:<n>:<user>`: the user's subscriptions, target → expiresAt.
        var subscriptionExpiries: String { group + "subx:" + name }
        /// `P{<g>}subr:<n>:<user>`: the user's subscribers, subscriber → expiresAt.
        var subscribers: String { group + "subr:" + name }

        /// `P{<g>}csx`: the bucket of the user's group listing users by custom status expiry.
        var customStatusExpiries: String { group + "csx" }
        /// `P{<g>}subexp`: the bucket of the user's group listing its users' subscriptions by expiry.
        var subscriptionExpiryIndex: String { group + "subexp" }

        /// The keys of the user's session `id`.
        func session(_ id: String) -> SessionKeys { SessionKeys(group: group, id: id) }

        /// `P{<g>}tok:<hash>`: a resume token of the user's (by its hash) → its session as
        /// `<g>/<id>`; a resume names its user, so its token is looked up in the user's group.
        func token(_ hash: String) -> String { group + "tok:" + hash }
        /// `P{<g>}cancel:t:<hash>`: the mark of a claim (by its new token's hash) its node gave up on.
        func claimCancel(_ hash: String) -> String { group + "cancel:t:" + hash }
    }

    /// The keys of one session, under its user's group's tag. A session id is minted before
    /// its user is known, so what starts from a token alone (`P{<g>}tok:<hash>`) names the
    /// session by its entry, `<g>/<id>`.
    struct SessionKeys {
        /// `P{<g>}`: the tag of its user's key group.
        let group: String
        /// The session's id.
        let id: String

        /// `P{<g>}s:<id>`: the session's record (user, platform, node, …).
        var record: String { group + "s:" + id }
        /// `P{<g>}sc:<id>`: the channels the session joined.
        var channels: String { group + "sc:" + id }
        /// `P{<g>}end:<id>`: an end in progress (user, kind, how), listed in `P{<g>}ending`.
        var ending: String { group + "end:" + id }
        /// `P{<g>}cancel:s:<id>`: the mark of a `session.start` its node gave up on.
        var startCancel: String { group + "cancel:s:" + id }
        /// `P{<g>}held`: the bucket of its group listing held sessions.
        var heldSessions: String { group + "held" }
        /// `P{<g>}ending`: the bucket of its group listing ends not finished.
        var endingSessions: String { group + "ending" }
    }

    /// The group of `user`'s keys: the group of `u:<n>:<user>`.
    func userGroup(_ user: Name) -> Int { groups.group(of: "u:" + Self.lengthPrefixed(user.string)) }

    /// The keys of `user`.
    func user(_ user: Name) -> UserKeys {
        UserKeys(group: groupTag(userGroup(user)), name: Self.lengthPrefixed(user.string))
    }

    /// `P{<group>}held`: group `group`'s held sessions by the deadline of their hold.
    func heldSessions(group: Int) -> String { groupTag(group) + "held" }

    /// `P{<group>}ns:<node>`: the sessions of group `group` that `node` has (bare ids).
    func nodeSessions(of node: String, group: Int) -> String { groupTag(group) + "ns:" + node }

    /// `P{<group>}rf:<node>`: the sessions of the dead `node` the reaper orphaned in group
    /// `group` whose channels the scanner has not refenced yet (more than one key group).
    func refenceLog(of node: String, group: Int) -> String { groupTag(group) + "rf:" + node }

    /// `P{<group>}ending`: group `group`'s session ends begun and not finished, by start.
    func endingSessions(group: Int) -> String { groupTag(group) + "ending" }

    /// `P{<group>}csx`: group `group`'s users by the expiry of their custom status.
    func customStatusExpiries(group: Int) -> String { groupTag(group) + "csx" }

    /// `P{<group>}subexp`: group `group`'s subscriptions (`<n>:<subscriber><target>`) by expiry.
    func subscriptionExpiryIndex(group: Int) -> String { groupTag(group) + "subexp" }
}
