/// The device family a session logs in from (PROTOCOL §3).
public enum Platform: String, Sendable, CaseIterable, Comparable {
    case web, ios, android, macos, windows, linux, cli, other

    public static func < (a: Platform, b: Platform) -> Bool { a.rawValue < b.rawValue }

    /// This platform's bit in a one-byte set of platforms (eight cases, eight bits).
    var bit: UInt8 {
        switch self {
        case .web: 1 << 0
        case .ios: 1 << 1
        case .android: 1 << 2
        case .macos: 1 << 3
        case .windows: 1 << 4
        case .linux: 1 << 5
        case .cli: 1 << 6
        case .other: 1 << 7
        }
    }
}
