import Foundation

/// The fan-out load against mosquitto: receivers on the same raw WebSocket client as the
/// Rollcall fan-out (``RawSocketPool``), speaking MQTT 3.1.1 in binary frames (subprotocol
/// `mqtt`): CONNECT, SUBSCRIBE QoS 0 to one topic, then count PUBLISH packets. One publisher
/// sends QoS 0 PUBLISHes of 100-byte payloads at a fixed rate (QoS 0 has no reply, so every
/// publish sent is expected at every receiver).
final class MosquittoFanoutDriver {
    static let topic = "bench/fanout"

    let counters = Counters()
    let deliveries: DeliveryTally
    private let pool: RawSocketPool
    private let port: Int
    private var receivers: [RawWebSocket] = []
    private var publisher: RawWebSocket?
    private let publishFrame = MQTTPacket.publish(topic: MosquittoFanoutDriver.topic,
                                                  payload: Array(repeating: UInt8(ascii: "m"), count: 100))

    init(port: Int, threads: Int) {
        self.port = port
        pool = RawSocketPool(threads: threads)
        deliveries = DeliveryTally(shards: threads)
    }

    /// Connects and subscribes `count` receivers (upgrades in parallel: mosquitto answers each
    /// at its next loop turn, about 0.1 s; MQTT pipelined), then the publisher; returns the
    /// receivers whose SUBACK arrived within `timeout`.
    func open(receivers count: Int, timeout: Double) -> Int {
        let start = MonotonicSeconds.now
        let sockets = pool.open(count: count, port: port, path: "/mqtt", subprotocol: "mqtt") { index, socket in
            configure(socket, add: deliveries.adder(shard: index))
        }
        for (index, socket) in sockets.enumerated() {
            guard let socket else {
                counters.add("openFailed")
                print("mosquitto: client fanout-r\(index) failed to open")
                continue
            }
            socket.send(opcode: 0x2, payload: MQTTPacket.connect(clientId: "fanout-r\(index)"))
            socket.send(opcode: 0x2, payload: MQTTPacket.subscribe(topic: Self.topic))
            receivers.append(socket)
        }
        let deadline = MonotonicSeconds.now + timeout
        while counters["subacks"] < receivers.count, MonotonicSeconds.now < deadline { usleep(20_000) }
        print("mosquitto: \(counters["subacks"])/\(count) receivers subscribed in \(String(format: "%.1f", MonotonicSeconds.now - start)) s")
        publisher = openClient(id: "fanout-publisher", add: { _ in })
        while counters["connacks"] < receivers.count + 1, MonotonicSeconds.now < deadline { usleep(20_000) }
        return counters["subacks"]
    }

    /// Counts what arrives on `socket`: its PUBLISHes (handed to `add`), CONNACKs and SUBACKs.
    private func configure(_ socket: RawWebSocket, add: @escaping (Int) -> Void) {
        let counters = self.counters
        var counter = MQTTPacketCounter()
        socket.onPayload = { bytes in
            let before = counter.counts
            let publishes = counter.scan(bytes)
            if publishes > 0 { add(publishes) }
            if counter.counts[2] > before[2] { counters.add("connacks") }
            if counter.counts[9] > before[9] { counters.add("subacks") }
        }
        socket.onClose = { counters.add("receiverCloses") }
    }

    private func openClient(id: String, add: @escaping (Int) -> Void) -> RawWebSocket? {
        do {
            let socket = try pool.open(port: port, path: "/mqtt", subprotocol: "mqtt") { socket in configure(socket, add: add) }
            socket.send(opcode: 0x2, payload: MQTTPacket.connect(clientId: id))
            return socket
        } catch {
            counters.add("openFailed")
            print("mosquitto: client \(id): \(error)")
            return nil
        }
    }

    /// True once the publisher's CONNACK arrived.
    var hasPublisher: Bool { publisher != nil && counters["connacks"] > receivers.count }

    /// Sends `count` QoS 0 publishes, one binary frame each.
    func publish(_ count: Int) {
        guard let publisher else { return }
        for _ in 0..<count { publisher.send(opcode: 0x2, payload: publishFrame) }
        counters.add("published", count)
    }

    /// Sends DISCONNECT and a close frame on every socket and stops the pool.
    func shutdown() {
        for socket in receivers + [publisher].compactMap({ $0 }) {
            socket.send(opcode: 0x2, payload: [0xE0, 0x00])
            socket.send(opcode: 0x8, payload: [0x03, 0xE8])
        }
        pool.shutdown()
    }
}
