/// A scan that goes over every key group once per round, a slice of them per reaper tick
/// (docs/cluster.md, "The scans"): with `ticksPerRound` ticks in a round, each tick takes the
/// next ⌈count / ticks⌉ groups, wrapping around. With one group, or a round no longer than a
/// tick, every tick takes them all.
struct KeyGroupRound {
    /// Groups in all.
    let count: Int
    /// Ticks in which every group is taken once (at least 1).
    let ticksPerRound: Int
    private var next = 0

    /// A round of `roundSeconds` over `count` groups, at one tick every `tickSeconds`.
    init(count: Int, roundSeconds: Double, tickSeconds: Double) {
        self.count = max(1, count)
        ticksPerRound = max(1, Int((roundSeconds / max(tickSeconds, 0.001)).rounded(.down)))
    }

    /// The groups of this tick, going on from the last tick's.
    mutating func slice() -> [Int] {
        let size = min(count, (count + ticksPerRound - 1) / ticksPerRound)
        let groups = (0..<size).map { (next + $0) % count }
        next = (next + size) % count
        return groups
    }
}
