/// The settings of one storm size: who joins, how fast, who leaves, and how long to wait.
struct StormPlan {
    /// Users that join (`storm-0` … `storm-<users-1>`), one session each.
    let users: Int
    /// The joins are spread evenly over this many seconds.
    let joinSeconds: Double
    /// Share of the users that leave after the last join.
    let leaveFraction: Double
    /// The leaves are spread evenly over this many seconds, starting right after the last join.
    let leaveSeconds: Double
    /// `presence.intervalSeconds` of the broker.
    let intervalSeconds: Double
    /// The channel everyone joins.
    let channel: String

    static let userPrefix = "storm-"

    /// The user id of number `n`.
    static func userId(_ n: Int) -> String { "\(userPrefix)\(n)" }

    /// How many users leave.
    var leaverCount: Int { min(users, max(0, Int((Double(users) * leaveFraction).rounded()))) }

    /// True for the users that leave: `leaverCount` of them, spread evenly over the numbers.
    func isLeaver(_ n: Int) -> Bool {
        let count = leaverCount
        return (n + 1) * count / users > n * count / users
    }

    /// The users still in the channel at the end.
    var finalSet: UserSet {
        var set = UserSet(capacity: users)
        for n in 0..<users where !isLeaver(n) { set.set(n, true) }
        return set
    }

    /// How long to wait for every roster to settle after the last leave before calling it
    /// "not converged".
    var convergenceWait: Double { intervalSeconds * 3 + 10 }
}
