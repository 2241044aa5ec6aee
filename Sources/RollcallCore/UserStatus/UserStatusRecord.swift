import RollcallProtocol

/// A user's connection status across all devices (PROTOCOL §6).
public enum OnlineStatus: String, Sendable, Equatable, CaseIterable {
    /// At least one session, held sessions included.
    case online
    /// Logged in before; no session now; the last one did not log out.
    case offline
    /// Logged out, or never seen.
    case loggedOut
}

/// The status record the wire carries:
/// `{userId, status, customStatus, platforms, lastUpdateTime, lastOnlineStatusUpdateTime,
/// lastCustomStatusUpdateTime}`.
///
/// A user never seen reads `loggedOut`, `customStatus: null`, `platforms: []` and all three
/// times `0`. No custom status is written as `null`.
package struct UserStatusRecord: Sendable, Equatable {
    /// The durable part.
    public var stored: StoredUserStatus
    /// Sorted, distinct platforms of the user's live and held sessions.
    public var platforms: [Platform]

    /// A record with its durable part and its platforms.
    package init(stored: StoredUserStatus, platforms: [Platform]) {
        self.stored = stored
        self.platforms = platforms
    }

    /// The record of a user the broker has never seen.
    package static func neverSeen(_ userId: Name) -> UserStatusRecord {
        UserStatusRecord(stored: StoredUserStatus(userId: userId, status: .loggedOut), platforms: [])
    }

    /// Writes the record as one compact JSON object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("userId"); writer.string(stored.userId.string)
        writer.key("status"); writer.string(stored.status.rawValue)
        writer.key("customStatus")
        if let custom = stored.customStatus { writer.string(custom) } else { writer.null() }
        writer.key("platforms")
        writer.beginArray()
        for platform in platforms { writer.string(platform.rawValue) }
        writer.endArray()
        writer.key("lastUpdateTime"); writer.int(Int(stored.lastUpdateTime))
        writer.key("lastOnlineStatusUpdateTime"); writer.int(Int(stored.lastOnlineStatusUpdateTime))
        writer.key("lastCustomStatusUpdateTime"); writer.int(Int(stored.lastCustomStatusUpdateTime))
        writer.endObject()
    }

    /// The record as a JSON value (for replies).
    public var json: JSON {
        var members: [(key: String, value: JSON)] = []
        members.reserveCapacity(7)
        members.append(("userId", .string(stored.userId.string)))
        members.append(("status", .string(stored.status.rawValue)))
        members.append(("customStatus", stored.customStatus.map(JSON.string) ?? .null))
        members.append(("platforms", .array(platforms.map { .string($0.rawValue) })))
        members.append(("lastUpdateTime", .int(Int(stored.lastUpdateTime))))
        members.append(("lastOnlineStatusUpdateTime", .int(Int(stored.lastOnlineStatusUpdateTime))))
        members.append(("lastCustomStatusUpdateTime", .int(Int(stored.lastCustomStatusUpdateTime))))
        return .object(JSONObject(members))
    }
}
