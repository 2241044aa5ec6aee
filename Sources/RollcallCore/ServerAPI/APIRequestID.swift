/// The transport's handle for one server API request (one HTTP exchange, PROTOCOL §10).
/// Assigned by the transport, never reused; ``Action/respond(_:status:body:)`` names it.
public struct APIRequestID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The raw number.
    public let rawValue: UInt64
    /// Wraps a raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: APIRequestID, rhs: APIRequestID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "api\(rawValue)" }
}
