import Foundation

/// Receivers that join the same channel and read everything on a ``RawSocketPool``'s epoll
/// threads, counting `{"event":"message"` lines without parsing them: the check that the
/// slow connections' long queues do not hold back anybody else's deliveries.
final class FastReceivers {
    private let pool: RawSocketPool
    private var sockets: [RawWebSocket] = []
    private let counters = Counters()
    /// Message events counted, sharded by pool thread.
    private let deliveries: DeliveryTally

    init(pool: RawSocketPool, shards: Int = 4) {
        self.pool = pool
        deliveries = DeliveryTally(shards: shards)
    }

    /// Receivers that joined.
    var joined: Int { counters["joined"] }

    /// Message events received so far, over every receiver.
    var delivered: Int { deliveries.total }

    /// Receivers whose socket ended (the broker cut or closed them) before ``close()``.
    var closed: Int { counters["closed"] }

    /// Opens `count` receivers as `fast-<i>` and waits (at most `timeout` seconds) until every
    /// one has its join reply.
    func open(count: Int, port: Int, timeout: Double) throws {
        let counters = self.counters
        let messagePrefix = RawEventLine.messagePrefix
        for index in 0..<count {
            let add = deliveries.adder(shard: index)
            let socket = try pool.open(port: port) { socket in
                socket.onLine = { line in
                    if RawEventLine.starts(line, with: messagePrefix) {
                        add(1)
                    } else if let reply = RawReplyLine.parse(line), reply.id == 2 {
                        counters.add(reply.ok ? "joined" : "joinFailed")
                    }
                }
                socket.onClose = { counters.add("closed") }
            }
            socket.send(text: #"{"id":1,"op":"login","userId":"fast-\#(index)"}"#)
            socket.send(text: SlowConsumersRun.joinRequest)
            sockets.append(socket)
        }
        let deadline = MonotonicSeconds.now + timeout
        while counters["joined"] + counters["joinFailed"] < count, MonotonicSeconds.now < deadline { usleep(10_000) }
        guard counters["joined"] == count else {
            throw RawSocketError("fast receivers: \(counters["joined"]) of \(count) joined (\(counters["joinFailed"]) refused)")
        }
    }

    /// Sends each receiver a close frame (1000); the pool closes the sockets when it stops.
    func close() {
        for socket in sockets { socket.send(opcode: 0x8, payload: [0x03, 0xE8]) }
        sockets.removeAll()
    }
}
