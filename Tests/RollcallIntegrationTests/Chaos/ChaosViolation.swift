/// One broken invariant: which, about what (node, channel, user), and the difference seen.
struct ChaosViolation: CustomStringConvertible, Sendable {
    /// The invariant's short name (`listing`, `roster`, `gap`, `status`, `webhooks`, …).
    let invariant: String
    /// What it is about, e.g. `n2 #c1` or `u3`.
    let subject: String
    let detail: String
    /// The users involved, whose histories the report prints.
    let users: [String]
    /// When it was seen (seconds on the run's ``ChaosClock``); nil for the final checks.
    var at: Double? = nil
    /// For a `seq` gap: the channel and the `seq`s that were not delivered (the report shows
    /// those events as the webhook receiver got them).
    var missed: (channel: String, seqs: ClosedRange<Int>)? = nil

    var description: String { "[\(invariant)] \(subject): \(detail)" + (at.map { String(format: " (at %.2fs)", $0) } ?? "") }
}
