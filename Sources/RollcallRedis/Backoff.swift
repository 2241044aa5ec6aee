/// Reconnect delays: the initial delay, doubled after each failed attempt up to a ceiling,
/// back to the initial one once a link is up.
struct Backoff {
    let initial: Double
    let maximum: Double
    private(set) var next: Double

    init(initial: Double, maximum: Double) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        next = initial
    }

    /// The delay to wait now; the following one is doubled.
    mutating func take() -> Double {
        let delay = next
        next = min(next * 2, maximum)
        return delay
    }

    /// After a successful connect.
    mutating func reset() { next = initial }
}
