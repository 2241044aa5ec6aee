import Foundation

/// One plain-socket publisher that pipelines `publish` requests with at most `window`
/// unanswered, counting the replies (and the `recipients` they report) as its pool thread
/// reads them. Requests are numbered from 2 (the login is 1).
final class PipelinedPublisher {
    private let socket: RawWebSocket
    private let counters = Counters()
    /// One permit per request that may still be sent before a reply frees one.
    private let permits: DispatchSemaphore
    /// The message, as JSON: a string of 200 `x`s.
    private let message = "\"" + String(repeating: "x", count: 200) + "\""
    /// Requests sent so far (the driver thread only).
    private(set) var sent = 0

    /// Connects on `pool`, logs in as `slow-publisher` and waits (at most 10 s) for the reply.
    init(pool: RawSocketPool, port: Int, window: Int) throws {
        let counters = self.counters
        // Created empty and filled: libdispatch traps when a semaphore is freed below its
        // initial value, which a run that times out with requests unanswered would do.
        let permits = DispatchSemaphore(value: 0)
        for _ in 0..<window { permits.signal() }
        self.permits = permits
        socket = try pool.open(port: port) { socket in
            socket.onLine = { line in
                guard let reply = RawReplyLine.parse(line) else { return }
                if reply.id == 1 {
                    counters.add(reply.ok ? "loggedIn" : "loginFailed")
                    return
                }
                counters.add(reply.ok ? "acked" : "rejected")
                counters.add("recipients", PublishReply.recipients(in: line) ?? 0)
                permits.signal()
            }
            socket.onClose = {
                counters.add("closed")
                permits.signal()  // wakes a waiting publishNext, which then sees the socket is gone
            }
        }
        socket.send(text: #"{"id":1,"op":"login","userId":"slow-publisher"}"#)
        let deadline = MonotonicSeconds.now + 10
        while counters["loggedIn"] + counters["loginFailed"] + counters["closed"] == 0, MonotonicSeconds.now < deadline {
            usleep(5_000)
        }
        guard counters["loggedIn"] == 1 else { throw RawSocketError("publisher: login failed or unanswered") }
    }

    /// Publish replies with `ok: true`.
    var acknowledged: Int { counters["acked"] }

    /// Publish replies that were errors (e.g. `RATE_LIMITED`).
    var rejected: Int { counters["rejected"] }

    /// Publish replies of either kind.
    var answered: Int { acknowledged + rejected }

    /// The sum of `recipients` over the acknowledged publishes: objects the broker queued.
    var recipients: Int { counters["recipients"] }

    /// The socket ended (the broker closed it).
    var isClosed: Bool { counters["closed"] > 0 }

    /// Sends the next publish once the window has room; false when the window stayed full
    /// until `deadline` (monotonic seconds) or the socket is gone.
    func publishNext(channel: String, before deadline: Double) -> Bool {
        let wait = max(0, deadline - MonotonicSeconds.now)
        guard permits.wait(timeout: .now() + wait) == .success, !isClosed else { return false }
        sent += 1
        let id = sent + 1
        return socket.send(text: #"{"id":\#(id),"op":"publish","channel":"\#(channel)","message":\#(message)}"#)
    }

    /// Sends a close frame (1000); the pool closes the socket when it stops.
    func close() {
        socket.send(opcode: 0x8, payload: [0x03, 0xE8])
    }
}

/// The `recipients` of a publish reply (`{"id":9,"ok":true,"result":{"recipients":1}}`), read
/// from its bytes without a JSON parse.
enum PublishReply {
    private static let key = Array(#""recipients":"#.utf8)

    /// The number after `"recipients":`; nil when the line has none.
    static func recipients(in line: UnsafeRawBufferPointer) -> Int? { ProbeScanner.number(after: key, in: line) }
}
