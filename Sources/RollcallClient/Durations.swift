import Foundation

extension Duration {
    /// The duration in seconds as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) * 1e-18
    }

    /// The wall-clock instant this long from now.
    var deadlineFromNow: Date { Date(timeIntervalSinceNow: timeInterval) }
}
