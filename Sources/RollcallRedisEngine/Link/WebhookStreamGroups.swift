import RollcallEventLoop
import Synchronization

/// Which key groups' webhook streams (`P{<group>}wh`) a node has lately written to, so that its
/// ``WebhookStream`` takes from those at once instead of asking every group at every poll
/// (docs/cluster.md, "Key groups and buckets"). The node's presence engine marks a channel's
/// group when it sends a script that may write the channel's events; the taker reads the
/// marks. A mark is a hint, not a record: it lasts ``holdMs`` (a script waits at most that long
/// between being built and running in Redis), and whatever a mark misses — or another node
/// left — the taker's sweep of every group finds within `claimIdleMs`.
///
/// One per node (cluster prefix and node id), shared by the engine and the taker, which run
/// apart; safe from any thread.
final class WebhookStreamGroups: Sendable {
    /// How long a mark keeps its group in the taker's turns (ms).
    static let holdMs: Int64 = 5000

    private let marks = Mutex<[Int: Int64]>([:])

    /// Group `group`'s stream may get an event from now on (`now`: a monotonic clock in ms).
    func mark(_ group: Int, now: Int64 = MonotonicClock.now) {
        marks.withLock { $0[group] = now }
    }

    /// The groups marked within ``holdMs`` of `now`; older marks are forgotten.
    func recent(now: Int64 = MonotonicClock.now) -> Set<Int> {
        marks.withLock { marks in
            marks = marks.filter { now - $0.value <= Self.holdMs }
            return Set(marks.keys)
        }
    }

    private static let nodes = Mutex<[String: WebhookStreamGroups]>([:])

    /// The marks of node `nodeId` of the cluster under `prefix` (made on first use).
    static func of(prefix: String, nodeId: String) -> WebhookStreamGroups {
        nodes.withLock { nodes in
            let name = "\(prefix.utf8.count):\(prefix)\(nodeId)"
            if let known = nodes[name] { return known }
            let made = WebhookStreamGroups()
            nodes[name] = made
            return made
        }
    }
}
