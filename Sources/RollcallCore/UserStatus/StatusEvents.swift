import RollcallProtocol

/// Encoders for the user-status events (PROTOCOL §6). Each is encoded once and the bytes are
/// shared by every recipient.
package enum StatusEvents {
    /// `{"event":"userStatus","statuses":[record, …]}`.
    package static func userStatus(_ records: [UserStatusRecord]) -> [UInt8] {
        Frames.event("userStatus", capacity: 64 + 224 * records.count) { writer in
            writer.key("statuses")
            writer.beginArray()
            for record in records { record.write(to: &writer) }
            writer.endArray()
        }
    }

    /// `{"event":"subscriptions","added":[userId],"removed":[userId]}`.
    package static func subscriptions(added: [Name], removed: [Name]) -> [UInt8] {
        Frames.event("subscriptions", capacity: 64 + 24 * (added.count + removed.count)) { writer in
            writer.key("added")
            writer.beginArray()
            for userId in added { writer.string(userId.string) }
            writer.endArray()
            writer.key("removed")
            writer.beginArray()
            for userId in removed { writer.string(userId.string) }
            writer.endArray()
        }
    }
}
