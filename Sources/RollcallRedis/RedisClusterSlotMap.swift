/// Which master serves each of the 16384 slots of a Redis Cluster, as one node's
/// `CLUSTER SLOTS` answered it. Plain values: built and read without sockets.
public struct RedisClusterSlotMap: Equatable {
    /// The masters, in the order the answer named them first (each once).
    public private(set) var masters: [RedisHostPort] = []
    /// For each slot, an index into ``masters``; -1 for a slot no master serves.
    private var owners: [Int16]

    /// An empty map (no slot served).
    public init() {
        owners = Array(repeating: -1, count: RedisClusterSlot.count)
    }

    /// The map in a `CLUSTER SLOTS` answer given by the node at `answeredBy`: each element is
    /// `[start, end, [host, port, id, …], replicas…]`. A master announced with an empty or `?`
    /// host is on `answeredBy`'s host (Redis' "unknown endpoint"). Throws
    /// ``RedisError/Code/protocolViolation`` for anything else.
    public init(clusterSlots reply: RedisReply, answeredBy: RedisHostPort) throws(RedisError) {
        self.init()
        guard let ranges = reply.elements else { throw Self.malformed("not an array") }
        for range in ranges {
            guard let fields = range.elements, fields.count >= 3,
                  let start = fields[0].integer, let end = fields[1].integer,
                  0 <= start, start <= end, end < RedisClusterSlot.count,
                  let node = fields[2].elements, node.count >= 2,
                  let announced = node[0].text, let port = node[1].integer, (1...65535).contains(port)
            else { throw Self.malformed("a range is not [start, end, [host, port, …], …]: \(range)") }
            let host = announced.isEmpty || announced == "?" ? answeredBy.host : announced
            assign(Int(start)...Int(end), to: RedisHostPort(host: host, port: Int(port)))
        }
    }

    /// The master serving `slot`, or nil when none does (a cluster missing a master).
    public func master(of slot: Int) -> RedisHostPort? {
        let index = Int(owners[slot])
        return index < 0 ? nil : masters[index]
    }

    /// True when every slot has a master.
    public var coversEverySlot: Bool { !owners.contains(-1) }

    /// The slots `master` serves, as ranges in order.
    public func slots(of master: RedisHostPort) -> [ClosedRange<Int>] {
        guard let index = masters.firstIndex(of: master) else { return [] }
        var ranges: [ClosedRange<Int>] = []
        var start: Int?
        for slot in 0..<RedisClusterSlot.count {
            let owned = Int(owners[slot]) == index
            if owned, start == nil { start = slot }
            if !owned, let first = start {
                ranges.append(first...(slot - 1))
                start = nil
            }
        }
        if let start { ranges.append(start...(RedisClusterSlot.count - 1)) }
        return ranges
    }

    /// Records that `master` serves `slots` (a `MOVED` redirection names one slot's new master
    /// before the next `CLUSTER SLOTS` does).
    public mutating func assign(_ slots: ClosedRange<Int>, to master: RedisHostPort) {
        let index: Int
        if let known = masters.firstIndex(of: master) {
            index = known
        } else {
            masters.append(master)
            index = masters.count - 1
        }
        for slot in slots { owners[slot] = Int16(index) }
        // A master left serving nothing is no longer one (its slots moved away).
        let serving = Set(owners.lazy.filter { $0 >= 0 }.map(Int.init))
        if serving.count != masters.count { compact(keeping: serving) }
    }

    private mutating func compact(keeping serving: Set<Int>) {
        var renumbered: [Int: Int] = [:]
        var kept: [RedisHostPort] = []
        for (index, master) in masters.enumerated() where serving.contains(index) {
            renumbered[index] = kept.count
            kept.append(master)
        }
        masters = kept
        owners = owners.map { $0 < 0 ? -1 : Int16(renumbered[Int($0)]!) }
    }

    private static func malformed(_ why: String) -> RedisError {
        RedisError(.protocolViolation, "CLUSTER SLOTS: \(why)")
    }
}
