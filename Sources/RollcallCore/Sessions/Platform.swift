/// The device family a session logs in from (PROTOCOL §3).
public enum Platform: String, Sendable, CaseIterable, Comparable {
    case web, ios, android, macos, windows, linux, cli, other

    public static func < (a: Platform, b: Platform) -> Bool { a.rawValue < b.rawValue }
}
