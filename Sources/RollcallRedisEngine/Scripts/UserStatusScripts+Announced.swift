import RollcallCore

extension UserStatusScripts {
    /// One change a user-status script made, as it answers it: `{payload, user, subscribers…}`.
    /// The script publishes nothing (on Redis Cluster the inboxes are shard channels of other
    /// slots); the node that ran it publishes ``payload`` to the inbox of each of ``recipients``
    /// right after the answer (``ClusterUserStatus/unwrapped(_:)``, docs/cluster.md "Delivery").
    struct Announcement: Equatable {
        /// `U<except session>\n<version>\n<record fields>`, as ``ClusterUserStatus/deliver(channel:payload:)`` reads it.
        let payload: [UInt8]
        /// The user whose record changed, then its live subscribers (read by the script in the
        /// user's key group): whose inboxes hear the change.
        let recipients: [Name]

        /// Reads one change of a script's answer; nil for anything else.
        init?(_ reply: StoreReply) {
            guard let elements = reply.elements, elements.count >= 2, let payload = elements[0].bytes else { return nil }
            let recipients = elements.dropFirst().compactMap { $0.text.map(Name.init(unchecked:)) }
            guard recipients.count == elements.count - 1 else { return nil }
            self.payload = payload
            self.recipients = recipients
        }
    }
}
