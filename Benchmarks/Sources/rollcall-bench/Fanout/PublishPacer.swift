import Foundation

/// Paces requests at a fixed rate from one driver thread: how many are due since the start,
/// capped by a window of requests still waiting for their reply.
struct PublishPacer {
    /// Requests per second.
    let rate: Double
    /// Most requests sent and not yet answered.
    let window: Int
    private let start: Double
    /// Requests sent so far.
    private(set) var sent = 0

    init(rate: Double, window: Int, start: Double = MonotonicSeconds.now) {
        self.rate = rate
        self.window = window
        self.start = start
    }

    /// How many requests to send now, given `outstanding` unanswered ones (at most `window`
    /// in flight, and never ahead of the schedule); counts them as sent.
    mutating func due(outstanding: Int, now: Double = MonotonicSeconds.now) -> Int {
        let scheduled = Int((now - start) * rate)
        let count = max(0, min(scheduled - sent, window - outstanding))
        sent += count
        return count
    }

    /// Requests the schedule asked for by `now` (sent or not).
    func scheduled(now: Double = MonotonicSeconds.now) -> Int { Int((now - start) * rate) }
}
