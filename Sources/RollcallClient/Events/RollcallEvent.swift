import RollcallProtocol

/// An event the broker pushed, typed (PROTOCOL §2: `presence`, `message`, `userStatus`,
/// `subscriptions`, `session`). Encodes and decodes as the wire object: the payload's members
/// plus `"event"`.
public enum RollcallEvent: Codable, Sendable, Equatable {
    /// A presence change or snapshot (§4).
    case presence(PresenceEvent)
    /// A published message (§4).
    case message(MessageEvent)
    /// User-status records (§6).
    case userStatus(UserStatusEvent)
    /// Subscriptions made or dropped by another session of this user (§6).
    case subscriptions(SubscriptionsEvent)
    /// A notice about the session, e.g. `refreshRequired` (§3).
    case session(SessionEvent)
    /// An event this client does not know (a later protocol's), or one whose members did not
    /// have the documented types: kept as sent.
    case other(Event)

    /// Types a parsed event; never fails (see ``other(_:)``).
    public init(_ event: Event) {
        self = (try? Self.decode(event)) ?? .other(event)
    }

    /// Types a parsed event, or throws why its members do not fit the documented shape. An
    /// unknown `event` name is ``other(_:)``, not an error.
    public static func decode(_ event: Event) throws(DecodingError) -> RollcallEvent {
        let value = JSON.object(event.object)
        switch event.name {
        case "presence": return .presence(try value.decode())
        case "message": return .message(try value.decode())
        case "userStatus": return .userStatus(try value.decode())
        case "subscriptions": return .subscriptions(try value.decode())
        case "session": return .session(try value.decode())
        default: return .other(event)
        }
    }

    /// The wire name (`presence`, `message`, …).
    public var name: String {
        switch self {
        case .presence: "presence"
        case .message: "message"
        case .userStatus: "userStatus"
        case .subscriptions: "subscriptions"
        case .session: "session"
        case .other(let event): event.name
        }
    }

    private enum NameKey: String, CodingKey { case event }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.container(keyedBy: NameKey.self).decode(String.self, forKey: .event)
        switch name {
        case "presence": self = .presence(try PresenceEvent(from: decoder))
        case "message": self = .message(try MessageEvent(from: decoder))
        case "userStatus": self = .userStatus(try UserStatusEvent(from: decoder))
        case "subscriptions": self = .subscriptions(try SubscriptionsEvent(from: decoder))
        case "session": self = .session(try SessionEvent(from: decoder))
        default:
            guard case .object(let object) = try JSON(from: decoder) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "an event is an object"))
            }
            self = .other(Event(object))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .presence(let payload): try payload.encode(to: encoder)
        case .message(let payload): try payload.encode(to: encoder)
        case .userStatus(let payload): try payload.encode(to: encoder)
        case .subscriptions(let payload): try payload.encode(to: encoder)
        case .session(let payload): try payload.encode(to: encoder)
        case .other(let event):
            try JSON.object(event.object).encode(to: encoder)
            return
        }
        var container = encoder.container(keyedBy: NameKey.self)
        try container.encode(name, forKey: .event)
    }
}
