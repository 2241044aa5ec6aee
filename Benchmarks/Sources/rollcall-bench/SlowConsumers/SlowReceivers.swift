import Foundation

/// Plain sockets that log in, join the channel for messages, read their two replies and then
/// never read again: everything the broker sends them afterwards fills the kernel's socket
/// buffers and then the broker's outbound queue for the connection. They are on no
/// ``RawSocketPool`` (nothing reads them); this type reads the replies itself, blocking.
final class SlowReceivers {
    private var sockets: [RawWebSocket] = []

    /// Opens `count` sockets as `slow-<i>`, joins each to ``SlowConsumersRun/channel`` and waits
    /// (all of them together at most `timeout` seconds) until each has read both replies.
    func open(count: Int, port: Int, timeout: Double) throws {
        let replies = Counters()
        for index in 0..<count {
            let socket = try RawWebSocket(port: port)
            socket.onLine = { line in
                guard let reply = RawReplyLine.parse(line) else { return }
                replies.add("replies.\(index)")
                if !reply.ok { replies.add("failed") }
            }
            socket.send(text: #"{"id":1,"op":"login","userId":"slow-\#(index)"}"#)
            socket.send(text: SlowConsumersRun.joinRequest)
            sockets.append(socket)
        }
        let deadline = MonotonicSeconds.now + timeout
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        for (index, socket) in sockets.enumerated() {
            try readReplies(socket, until: { replies["replies.\(index)"] >= 2 }, into: buffer, deadline: deadline)
        }
        guard replies["failed"] == 0 else { throw RawSocketError("slow receivers: \(replies["failed"]) login or join replies were errors") }
    }

    /// Reads `socket` until `done()` (its replies are in); throws at `deadline` or when the
    /// socket ends.
    private func readReplies(_ socket: RawWebSocket, until done: () -> Bool,
                             into buffer: UnsafeMutableRawBufferPointer, deadline: Double) throws {
        while !done() {
            let left = deadline - MonotonicSeconds.now
            guard left > 0 else { throw RawSocketError("slow receivers: no login and join replies in time") }
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(min(left, 1) * 1000)) >= 0 || errno == EINTR else {
                throw RawSocketError("slow receivers: poll: \(String(cString: strerror(errno)))")
            }
            guard socket.readAvailable(into: buffer) else {
                throw RawSocketError("slow receivers: the broker closed a socket before it joined (\(socket.endReason ?? "EOF"))")
            }
        }
    }

    /// Closes every socket (unread bytes and all: the broker sees a reset).
    func close() {
        for socket in sockets { socket.markClosed() }
        sockets.removeAll()
    }
}
