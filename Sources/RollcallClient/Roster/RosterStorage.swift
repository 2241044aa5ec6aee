import RollcallProtocol

/// Where a ``PresenceRoster`` keeps its members. ``RosterMembers`` (user id → state and info)
/// is the storage of ``Roster``; a load generator holding thousands of rosters may plug in
/// something smaller (a bitset of user numbers) and feed it raw event lines.
public protocol RosterStorage {
    /// How a user is named in this storage.
    associatedtype User
    /// Number of members.
    var count: Int { get }
    /// Empties the storage (a snapshot or a resync starts).
    mutating func removeAll()
    /// Makes `user` a member (with an empty state); returns false when it already was one.
    @discardableResult mutating func insert(_ user: User) -> Bool
    /// Removes `user`; returns false when it was not a member.
    @discardableResult mutating func remove(_ user: User) -> Bool
}

/// One member of a ``Roster``: its user id, channel state and v1.1 `info`; also an entry of a
/// `snapshot` event or a `getOnlineUsers` page, which decode into it.
public struct RosterMember: Codable, Sendable, Equatable {
    /// The user id.
    public var userId: String
    /// The user's state in the channel (`{k: v}`, values are strings).
    public var state: [String: String]
    /// The issuer-vouched `info` object (v1.1), nil when the user has none.
    public var info: JSON?

    /// A member.
    public init(userId: String, state: [String: String] = [:], info: JSON? = nil) {
        self.userId = userId
        self.state = state
        self.info = info
    }

    enum CodingKeys: String, CodingKey { case userId, state, info }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userId = try c.decode(String.self, forKey: .userId)
        state = try c.decodeState(forKey: .state) ?? [:]
        info = try c.decodeIfPresent(JSON.self, forKey: .info).flatMap { $0.isNull ? nil : $0 }
    }
}

/// The members of a ``Roster``, by user id.
public struct RosterMembers: RosterStorage, Sendable, Equatable {
    private(set) var byId: [String: RosterMember] = [:]

    /// An empty member table.
    public init() {}

    public var count: Int { byId.count }

    public mutating func removeAll() { byId.removeAll(keepingCapacity: true) }

    @discardableResult public mutating func insert(_ user: String) -> Bool {
        guard byId[user] == nil else { return false }
        byId[user] = RosterMember(userId: user)
        return true
    }

    @discardableResult public mutating func remove(_ user: String) -> Bool {
        byId.removeValue(forKey: user) != nil
    }

    /// Adds or replaces a member; returns false when the user already was one.
    @discardableResult public mutating func upsert(_ member: RosterMember) -> Bool {
        byId.updateValue(member, forKey: member.userId) == nil
    }

    /// The member with this user id.
    public subscript(userId: String) -> RosterMember? { byId[userId] }

    /// The members in byte order of user id (the order `getOnlineUsers` uses).
    public var sorted: [RosterMember] {
        byId.values.sorted { $0.userId.utf8.lexicographicallyPrecedes($1.userId.utf8) }
    }
}
