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

        /// The record's user and version, from ``payload`` (nil for one that is no record).
        var record: (user: String, version: Int64)? {
            guard payload.first == UInt8(ascii: "U") else { return nil }
            let fields = payload.dropFirst().split(separator: UInt8(ascii: "\n"), maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, let version = Int64(String(decoding: fields[1], as: UTF8.self)) else { return nil }
            return (String(decoding: fields[2], as: UTF8.self), version)
        }

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
