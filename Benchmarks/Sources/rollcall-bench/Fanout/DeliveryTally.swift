import Foundation
import RollcallClient

/// Events counted on the client service threads. Each runtime (one service thread) has its
/// own shard and lock, so the threads never contend with each other; the driver adds the
/// shards up when it reads.
final class DeliveryTally: @unchecked Sendable {
    /// One runtime's count.
    private final class Shard: @unchecked Sendable {
        let lock = NSLock()
        var count = 0
    }

    private let shards: [(runtime: ClientRuntime?, shard: Shard)]

    /// One shard per runtime in `runtimes`.
    init(runtimes: [ClientRuntime]) {
        shards = runtimes.map { ($0, Shard()) }
    }

    /// `count` shards, picked by number (raw sockets: one per connection number modulo `count`).
    init(shards count: Int) {
        shards = (0..<max(1, count)).map { _ in (nil, Shard()) }
    }

    /// A closure that adds to shard `number % shards`.
    func adder(shard number: Int) -> (Int) -> Void {
        let shard = shards[number % shards.count].shard
        return { delta in
            shard.lock.lock()
            shard.count += delta
            shard.lock.unlock()
        }
    }

    /// A closure that adds `n` to the shard of `runtime`; call it only from that runtime's
    /// service thread (e.g. in `onRawEvent`).
    func adder(for runtime: ClientRuntime) -> (Int) -> Void {
        let shard = shards.first { $0.runtime === runtime }?.shard ?? shards[0].shard
        return { delta in
            shard.lock.lock()
            shard.count += delta
            shard.lock.unlock()
        }
    }

    /// The sum over every shard.
    var total: Int {
        shards.reduce(0) { sum, entry in
            entry.shard.lock.lock(); defer { entry.shard.lock.unlock() }
            return sum + entry.shard.count
        }
    }
}

/// Raw event lines recognised by their first bytes, without a JSON parse.
enum RawEventLine {
    /// `{"event":"message"` — the broker writes `event` first.
    static let messagePrefix = Array(#"{"event":"message""#.utf8)

    /// True when `line` starts with `prefix`.
    static func starts(_ line: UnsafeRawBufferPointer, with prefix: [UInt8]) -> Bool {
        guard line.count >= prefix.count, let base = line.baseAddress else { return false }
        return prefix.withUnsafeBufferPointer { memcmp(base, $0.baseAddress!, $0.count) == 0 }
    }
}
