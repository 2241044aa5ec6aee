import RollcallProtocol

/// A `presence` event (PROTOCOL §4): a member joined, left, timed out or changed its state, a
/// `snapshot` of the whole roster, or an `interval` batch. Every field the broker may leave out
/// is optional; ``channelType`` defaults to ``ChannelType/message``.
public struct PresenceEvent: Codable, Sendable, Equatable {
    /// What happened.
    public var type: PresenceKind
    /// The channel's name.
    public var channel: String
    /// The channel's type.
    public var channelType: ChannelType
    /// The user the event is about (`join`, `leave`, `timeout`, `stateChanged`).
    public var publisher: String?
    /// The user's full state in the channel (`join`, `stateChanged`).
    public var state: [String: String]?
    /// The joining user's token `info` (1.1; `join`).
    public var info: JSON?
    /// Member users after the event.
    public var occupancy: Int?
    /// The channel's mode after the event.
    public var mode: PresenceMode?
    /// The channel's presence sequence number (steps by exactly 1 per event; a snapshot
    /// carries the one of the state it shows).
    public var seq: Int?
    /// Milliseconds since the Unix epoch, from the broker's clock.
    public var timestamp: Int?
    /// `snapshot`: the members (the receiver included).
    public var snapshot: [RosterMember]?
    /// `snapshot`: more members than `presence.snapshotMaxMembers`; read the rest from ``nextPage``.
    public var truncated: Bool?
    /// `snapshot` with ``truncated``: the `getOnlineUsers` page to read next.
    public var nextPage: String?
    /// `interval`: the net change since the previous event.
    public var interval: IntervalChange?

    /// The event's channel as a reference.
    public var channelRef: ChannelRef { ChannelRef(channel, type: channelType) }

    /// An event with the given fields (tests, replays).
    public init(type: PresenceKind, channel: String, channelType: ChannelType = .message, publisher: String? = nil,
                state: [String: String]? = nil, info: JSON? = nil, occupancy: Int? = nil, mode: PresenceMode? = nil,
                seq: Int? = nil, timestamp: Int? = nil, snapshot: [RosterMember]? = nil, truncated: Bool? = nil,
                nextPage: String? = nil, interval: IntervalChange? = nil) {
        self.type = type; self.channel = channel; self.channelType = channelType; self.publisher = publisher
        self.state = state; self.info = info; self.occupancy = occupancy; self.mode = mode; self.seq = seq
        self.timestamp = timestamp; self.snapshot = snapshot; self.truncated = truncated; self.nextPage = nextPage
        self.interval = interval
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, channelType, publisher, state, info, occupancy, mode, seq, timestamp, snapshot, truncated, nextPage, interval
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decode(PresenceKind.self, forKey: .type)
        channel = try c.decode(String.self, forKey: .channel)
        channelType = try c.decode(ChannelType.self, forKey: .channelType, default: .message)
        publisher = try c.decodeIfPresent(String.self, forKey: .publisher)
        state = try c.decodeState(forKey: .state)
        info = try c.decodeIfPresent(JSON.self, forKey: .info).flatMap { $0.isNull ? nil : $0 }
        occupancy = try c.decodeIfPresent(Int.self, forKey: .occupancy)
        mode = try c.decodeIfPresent(PresenceMode.self, forKey: .mode)
        seq = try c.decodeIfPresent(Int.self, forKey: .seq)
        timestamp = try c.decodeIfPresent(Int.self, forKey: .timestamp)
        snapshot = try c.decodeIfPresent([RosterMember].self, forKey: .snapshot)
        truncated = try c.decodeIfPresent(Bool.self, forKey: .truncated)
        nextPage = try c.decodeIfPresent(String.self, forKey: .nextPage)
        interval = try c.decodeIfPresent(IntervalChange.self, forKey: .interval)
    }
}

extension PresenceKind: Codable {}

/// The net change an `interval` event carries (PROTOCOL §4).
public struct IntervalChange: Codable, Sendable, Equatable {
    /// Users who became members (with an empty state; their states follow in ``stateChanged``).
    public var join: [String]
    /// Users who left.
    public var leave: [String]
    /// Users whose presence timed out.
    public var timeout: [String]
    /// The latest full state of users still present.
    public var stateChanged: [StateChange]
    /// The token `info` of users in ``join`` that have one (1.1).
    public var joinInfo: [String: JSON]?

    /// One user's new state.
    public struct StateChange: Codable, Sendable, Equatable {
        /// The user id.
        public var userId: String
        /// The user's full state.
        public var state: [String: String]
        /// A change.
        public init(userId: String, state: [String: String]) {
            self.userId = userId
            self.state = state
        }

        enum CodingKeys: String, CodingKey { case userId, state }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            userId = try c.decode(String.self, forKey: .userId)
            state = try c.decodeState(forKey: .state) ?? [:]
        }
    }

    /// A change with the given lists.
    public init(join: [String] = [], leave: [String] = [], timeout: [String] = [], stateChanged: [StateChange] = [],
                joinInfo: [String: JSON]? = nil) {
        self.join = join; self.leave = leave; self.timeout = timeout; self.stateChanged = stateChanged; self.joinInfo = joinInfo
    }

    enum CodingKeys: String, CodingKey { case join, leave, timeout, stateChanged, joinInfo }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        join = try c.decode([String].self, forKey: .join, default: [])
        leave = try c.decode([String].self, forKey: .leave, default: [])
        timeout = try c.decode([String].self, forKey: .timeout, default: [])
        stateChanged = try c.decode([StateChange].self, forKey: .stateChanged, default: [])
        joinInfo = try c.decodeIfPresent([String: JSON].self, forKey: .joinInfo)
    }
}
