import Foundation

/// The broker's CPU seconds against the messages it has answered, sampled as a run goes.
/// With O(1) appends to the slow connections' queues the curve is a straight line; when an
/// append copies the queue, each message costs more than the one before and the curve bends
/// upward.
struct BrokerCPUCurve {
    /// (messages answered, broker CPU seconds since the first publish), in order.
    private(set) var points: [(messages: Int, cpuSeconds: Double)] = [(0, 0)]

    /// Adds a sample; one at the same message count as the last replaces it.
    mutating func record(messages: Int, cpuSeconds: Double) {
        if let last = points.last, last.messages == messages {
            points[points.count - 1] = (messages, cpuSeconds)
        } else {
            points.append((messages, cpuSeconds))
        }
    }

    /// The CPU seconds at `messages`, interpolated between the samples around it; nil past the last.
    func cpuSeconds(at messages: Double) -> Double? {
        for (before, after) in zip(points, points.dropFirst()) where Double(after.messages) >= messages {
            let span = Double(after.messages - before.messages)
            let fraction = span > 0 ? (messages - Double(before.messages)) / span : 1
            return before.cpuSeconds + fraction * (after.cpuSeconds - before.cpuSeconds)
        }
        return nil
    }

    /// CPU spent on the second half of the messages ÷ CPU spent on the first half: about 1
    /// when every message costs the same, towards 3 when a message's cost grows with the
    /// queue (∫ over the second half of a line through 0 is three times the first half's).
    /// Nil without samples past the middle or without CPU in the first half.
    var secondHalfToFirstHalf: Double? {
        guard let last = points.last, last.messages >= 2,
              let middle = cpuSeconds(at: Double(last.messages) / 2), middle > 0 else { return nil }
        return (last.cpuSeconds - middle) / middle
    }

    /// The samples as chart points: thousands of messages, broker CPU seconds.
    var chartPoints: [[Double]] { points.map { [Double($0.messages) / 1000, $0.cpuSeconds] } }
}
