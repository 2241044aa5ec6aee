import Foundation
import RollcallClient
import RollcallProtocol

/// The fan-out load: receivers that join one channel for messages and count deliveries from
/// their raw event lines, and one publisher that pipelines `publish` requests with a bounded
/// window of unanswered ones. Client callbacks only bump counters; one driver thread paces.
final class FanoutDriver {
    /// Channel every receiver joins.
    static let channel = "bench:fanout"

    let counters = Counters()
    let deliveries: DeliveryTally
    private let url: String
    /// The receivers' threads: plain sockets read on epoll (default), or lws client runtimes (`--lws-receivers`).
    private let rawPool: RawSocketPool?
    private let pool: LoadPool?
    private let publisherRuntime: ClientRuntime
    private var receivers: [RollcallConnection] = []
    private var rawReceivers: [RawWebSocket] = []
    private var publisher: RollcallConnection?
    /// A 100-byte message: a string of 98 characters and its two quotes.
    private let message = JSON.string(String(repeating: "m", count: 98))
    /// Receivers and the publisher offer permessage-deflate.
    private let deflate: Bool

    init(url: String, receivers: Int, threads: Int, rawReceivers: Bool, deflate: Bool = false) throws {
        self.url = url
        self.deflate = deflate
        if rawReceivers {
            rawPool = RawSocketPool(threads: threads, deflate: deflate)
            pool = nil
            deliveries = DeliveryTally(shards: threads)
        } else {
            let pool = try LoadPool(url: url, threads: threads, connections: receivers, rxBufferSize: 16_384)
            self.pool = pool
            rawPool = nil
            deliveries = DeliveryTally(runtimes: pool.runtimes)
        }
        publisherRuntime = try ClientRuntime(options: .init(maxConnections: 8))
    }

    /// Bytes the plain-socket receivers read so far (racy sum, for per-step deltas); nil with lws receivers.
    var receivedBytes: Int? { rawPool == nil ? nil : rawReceivers.reduce(0) { $0 + $1.bytesReceived } }

    /// Unanswered publish requests.
    var outstanding: Int { counters["published"] - counters["acked"] - counters["rejected"] - counters["failedReplies"] }

    /// Deliveries the acknowledged publishes promised (the sum of their `recipients`).
    var expectedDeliveries: Int { counters["expectedDeliveries"] }

    /// Receivers closed by the broker or dropped since they joined.
    var closedReceivers: Int { counters["receiverCloses"] }

    /// Opens and logs in `count` receivers, joins each to the channel (messages only, no
    /// presence), then opens the publisher. Returns the receivers that joined.
    func open(receivers count: Int, timeout: Double) -> Int {
        if let rawPool { return openRaw(rawPool, receivers: count, timeout: timeout) }
        guard let pool else { return 0 }
        let counters = self.counters
        let deliveries = self.deliveries
        let prefix = RawEventLine.messagePrefix
        let (sessions, seconds) = pool.openLoggedIn(
            count: count, label: "fanout", timeout: timeout, userId: { "fanout-r\($0)" },
            configure: { _, connection in
                let add = deliveries.adder(for: connection.runtime)
                connection.onRawEvent = { line in
                    if RawEventLine.starts(line, with: prefix) { add(1) } else { counters.add("otherEvents") }
                }
                connection.onClose = { info in
                    counters.add("receiverCloses")
                    if info.code == 1013 || info.reason.contains("slow consumer") { counters.add("slowConsumerCuts") }
                }
            })
        receivers = sessions.compactMap { $0 }
        print("fanout: \(receivers.count)/\(count) receivers logged in in \(String(format: "%.1f", seconds)) s; joining")
        for receiver in receivers {
            receiver.send(Op.join.rawValue, ["channel": .string(Self.channel), "presence": false, "messages": true]) { reply in
                counters.add(reply.ok ? "joined" : "joinFailed")
            }
        }
        let deadline = MonotonicSeconds.now + timeout
        while counters["joined"] + counters["joinFailed"] < receivers.count, MonotonicSeconds.now < deadline {
            usleep(20_000)
        }
        openPublisher()
        return counters["joined"]
    }

    /// Raw receivers: each socket sends its login and join at once (pipelined) and counts
    /// message lines and the join's reply from the bytes it reads.
    private func openRaw(_ rawPool: RawSocketPool, receivers count: Int, timeout: Double) -> Int {
        guard let port = LoopbackHTTP(url: url)?.port else { return 0 }
        let counters = self.counters
        let prefix = RawEventLine.messagePrefix
        let joined = Array(#"{"id":2,"ok":true"#.utf8)
        let start = MonotonicSeconds.now
        for index in 0..<count {
            let add = deliveries.adder(shard: index)
            do {
                let socket = try rawPool.open(port: Int(port)) { socket in
                    socket.onLine = { line in
                        if RawEventLine.starts(line, with: prefix) {
                            add(1)
                        } else if RawEventLine.starts(line, with: joined) {
                            counters.add("joined")
                        } else {
                            counters.add("otherEvents")
                        }
                    }
                    socket.onClose = { counters.add("receiverCloses") }
                }
                socket.send(text: #"{"id":1,"op":"login","userId":"fanout-r\#(index)","platform":"cli"}"#)
                socket.send(text: #"{"id":2,"op":"join","channel":"\#(Self.channel)","presence":false,"messages":true}"#)
                rawReceivers.append(socket)
            } catch {
                counters.add("openFailed")
                print("fanout: receiver \(index): \(error)")
            }
        }
        let deadline = MonotonicSeconds.now + timeout
        while counters["joined"] < rawReceivers.count, MonotonicSeconds.now < deadline {
            usleep(20_000)
        }
        print("fanout: \(counters["joined"])/\(count) raw receivers joined in \(String(format: "%.1f", MonotonicSeconds.now - start)) s"
              + (deflate ? ", \(rawReceivers.filter(\.isCompressed).count) with permessage-deflate" : ""))
        openPublisher()
        return counters["joined"]
    }

    private func openPublisher() {
        guard let connection = try? RollcallConnection(url: url, subprotocol: "rollcall.v1", runtime: publisherRuntime,
                                                     permessageDeflate: deflate) else {
            return
        }
        connection.start()
        do {
            try connection.waitUntilOpen(timeout: .seconds(10))
            let reply = try connection.login(userId: "fanout-publisher", platform: "cli")
            if reply.ok { publisher = connection }
            if deflate { print("fanout: publisher permessage-deflate: \(connection.isCompressed)") }
        } catch {
            print("fanout: publisher failed: \(error)")
        }
    }

    /// True once the publisher is logged in.
    var hasPublisher: Bool { publisher != nil }

    /// Sends `count` publish requests; replies update the counters on the service thread.
    func publish(_ count: Int) {
        guard let publisher, count > 0 else { return }
        let counters = self.counters
        let arguments: JSON = ["channel": .string(Self.channel), "message": message]
        for _ in 0..<count {
            counters.add("published")
            publisher.send(Op.publish.rawValue, arguments) { reply in
                if reply.ok, let recipients = reply["recipients"]?.numberValue?.intValue {
                    counters.add("acked")
                    counters.add("expectedDeliveries", recipients)
                } else if reply.ok {
                    counters.add("failedReplies")
                } else {
                    counters.add("rejected")
                    counters.add("error.\(reply.errorCodeText ?? "?")")
                }
            }
        }
    }

    /// Closes every connection with 1000, gives the closes a moment, and stops the runtimes.
    func shutdown() {
        publisher?.close(code: 1000)
        for receiver in receivers { receiver.close(code: 1000) }
        let deadline = MonotonicSeconds.now + 2
        while MonotonicSeconds.now < deadline,
              receivers.contains(where: { $0.currentState != .closed }) || (publisher.map { $0.currentState != .closed } ?? false) {
            usleep(50_000)
        }
        for receiver in rawReceivers { receiver.send(opcode: 0x8, payload: [0x03, 0xE8]) }
        pool?.shutdown()
        rawPool?.shutdown()
        publisherRuntime.shutdown()
    }
}
