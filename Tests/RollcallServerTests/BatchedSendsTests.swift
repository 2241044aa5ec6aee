import CSendBatch
import Glibc
@testable import RollcallServer
import RollcallCore
import Testing

/// ``BatchedSends`` over real loopback TCP sockets: the frames it builds, and what it reports
/// for a socket that takes all, part or none of a frame, or has failed. Every send completes
/// during the call (a test that blocked would hang here). Skipped where this kernel refuses
/// io_uring: the broker then writes with `lws_write`, which every other test covers.
@Suite("BatchedSends", .enabled(if: ioUringAvailable))
struct BatchedSendsTests {
    private func record(_ id: UInt64) -> ConnectionRecord {
        ConnectionRecord(id: ConnectionID(id), wsi: OpaquePointer(bitPattern: 0x1000)!, now: 0)
    }

    private func collect(_ batch: BatchedSends) throws -> [(ConnectionID, BatchedSends.Outcome)] {
        var outcomes: [(ConnectionID, BatchedSends.Outcome)] = []
        try batch.send { record, outcome in outcomes.append((record.id, outcome)) }
        return outcomes
    }

    @Test("frames: header and payload, one frame shared by the recipients of one object")
    func framesAreTextFramesOfTheObject() throws {
        let batch = try BatchedSends.make().get()
        let pairs = try (0..<3).map { _ in try LoopbackPair() }
        let shared = Array("{\"event\":\"presence\"}".utf8)
        let other = Array(repeating: UInt8(ascii: "x"), count: 300)
        batch.add(record(1), object: shared, socket: pairs[0].sender)
        batch.add(record(2), object: shared, socket: pairs[1].sender)
        batch.add(record(3), object: other, socket: pairs[2].sender)
        let outcomes = try collect(batch)
        #expect(outcomes.map(\.0) == [ConnectionID(1), ConnectionID(2), ConnectionID(3)], "in the order added")
        for (_, outcome) in outcomes {
            guard case .sent = outcome else { Issue.record("not sent: \(outcome)"); continue }
        }
        #expect(try pairs[0].receive(count: 2 + shared.count) == [0x81, UInt8(shared.count)] + shared)
        #expect(try pairs[1].receive(count: 2 + shared.count) == [0x81, UInt8(shared.count)] + shared)
        #expect(try pairs[2].receive(count: 4 + 300) == [0x81, 126, 0x01, 0x2C] + other)
        #expect(batch.isEmpty, "a send forgets what it sent")
    }

    @Test("headers: 7-bit, 16-bit and 64-bit payload lengths (RFC 6455 §5.2)",
          arguments: [(125, [0x81, 125]), (126, [0x81, 126, 0, 126]), (65_535, [0x81, 126, 0xFF, 0xFF]),
                      (65_536, [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0])] as [(Int, [UInt8])])
    func headerLengths(payloadLength: Int, header: [UInt8]) {
        #expect(BatchedSends.headerBytes(payloadLength) == header.count)
        var bytes = [UInt8](repeating: 0, count: 10)
        let end = bytes.withUnsafeMutableBufferPointer { buffer in
            BatchedSends.writeHeader(payloadLength: payloadLength, at: buffer.baseAddress!) - buffer.baseAddress!
        }
        #expect(end == header.count)
        #expect(Array(bytes.prefix(end)) == header)
    }

    @Test("a socket that fills: the frame cut short, then nothing taken (EAGAIN), both at once; the rest of the batch is sent")
    func fullSocketReportsWhatItTook() throws {
        let batch = try BatchedSends.make().get()
        let full = try LoopbackPair(sendBufferBytes: 4096, receiveBufferBytes: 4096)
        let open = try LoopbackPair()
        let big = Array(repeating: UInt8(ascii: "b"), count: 1 << 20)
        batch.add(record(1), object: big, socket: full.sender)
        batch.add(record(2), object: Array("{}".utf8), socket: open.sender)
        let first = try collect(batch)
        guard case .partlySent(let frame, let sent) = first[0].1 else {
            Issue.record("a 1 MiB frame fitted a 4 KiB socket: \(first[0].1)")
            return
        }
        #expect(sent > 0 && sent < frame.count && frame.count == 10 + big.count)
        guard case .sent = first[1].1 else { Issue.record("the other socket's frame: \(first[1].1)"); return }
        #expect(try open.receive(count: 4) == [0x81, 2] + Array("{}".utf8))

        // TCP may take a little more after a short send; within a few more it takes nothing.
        var tookNothing = false
        for _ in 0..<10 where !tookNothing {
            batch.add(record(1), object: big, socket: full.sender)
            if case .partlySent(_, 0) = try collect(batch)[0].1 { tookNothing = true }
        }
        #expect(tookNothing, "a full socket reports EAGAIN as nothing sent")
    }

    @Test("a batch is full at 1024 frames or 256 KiB of frames, so a large flush goes out in several")
    func fullAtItsBounds() throws {
        let batch = try BatchedSends.make().get()
        let small = Array("{}".utf8)
        for index in 0..<1023 { batch.add(record(UInt64(index)), socket: -1, payloadLength: small.count) { $0.update(from: small, count: small.count) } }
        #expect(!batch.isFull)
        batch.add(record(1023), socket: -1, payloadLength: small.count) { $0.update(from: small, count: small.count) }
        #expect(batch.isFull)
        var failures = 0
        try batch.send { _, outcome in if case .failed(EBADF) = outcome { failures += 1 } }
        #expect(failures == 1024, "socket -1: every send fails with EBADF, and each is reported")

        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 100_000)
        for index in 0..<2 { batch.add(record(UInt64(index)), socket: -1, payloadLength: big.count) { $0.update(from: big, count: big.count) } }
        #expect(!batch.isFull)
        batch.add(record(2), socket: -1, payloadLength: big.count) { $0.update(from: big, count: big.count) }
        #expect(batch.isFull)
        try batch.send { _, _ in }
        #expect(batch.isEmpty && !batch.isFull)
    }

    /// The guard for kernels that wait for a full socket inside io_uring: a send made
    /// without `MSG_DONTWAIT` to a full blocking socket waits in the kernel here too, and the
    /// run cancels it instead of waiting for the peer.
    @Test("a send still in flight when the submission returns is cancelled: nothing sent, and the call returns")
    func sendInFlightIsCancelled() throws {
        let pair = try LoopbackPair(sendBufferBytes: 4096, receiveBufferBytes: 4096, blocking: true)
        var error: Int32 = 0
        let ring = try #require(rollcall_send_batch_create(8, &error))
        defer { rollcall_send_batch_destroy(ring) }
        let big = [UInt8](repeating: UInt8(ascii: "f"), count: 1 << 20)
        func send(flags: Int32) -> Int32 {
            var fd = pair.sender
            var length = UInt32(big.count)
            var result: Int32 = 0
            big.withUnsafeBufferPointer { bytes in
                var buffer: UnsafePointer<UInt8>? = bytes.baseAddress
                _ = rollcall_send_batch_run_flags(ring, &fd, &buffer, &length, &result, 1, flags)
            }
            return result
        }
        // Fill the socket until it takes nothing (TCP takes a little more after a short send).
        var full = false
        for _ in 0..<20 where !full { full = send(flags: Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) == -EAGAIN }
        #expect(full, "the socket fills")
        #expect(rollcall_send_batch_unfinished(ring) == 0)
        let waited = send(flags: Int32(MSG_NOSIGNAL))
        #expect(waited == -ECANCELED, "nothing sent: \(waited)")
        #expect(rollcall_send_batch_unfinished(ring) == 1)
    }

    @Test("a socket the peer reset: failed with its errno")
    func resetSocketFails() throws {
        let batch = try BatchedSends.make().get()
        let pair = try LoopbackPair()
        pair.resetReceiver()
        // The first send after a reset may still be taken; the next one fails.
        var failure: Int32?
        for _ in 0..<5 where failure == nil {
            batch.add(record(1), object: Array("{}".utf8), socket: pair.sender)
            if case .failed(let error) = try collect(batch)[0].1 { failure = error }
        }
        #expect(failure == ECONNRESET || failure == EPIPE)
    }
}

/// Whether this kernel gives the test process an io_uring with `IORING_OP_SEND`.
private let ioUringAvailable = (try? BatchedSends.make().get()) != nil

/// A connected pair of loopback TCP sockets: `sender` non-blocking (as lws' are) unless
/// asked otherwise, the receiving end blocking with a receive timeout.
private final class LoopbackPair {
    let sender: Int32
    private var receiver: Int32

    init(sendBufferBytes: Int32? = nil, receiveBufferBytes: Int32? = nil, blocking: Bool = false) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                guard bind(listener, address, length) == 0, listen(listener, 1) == 0,
                      getsockname(listener, address, &length) == 0 else { throw PairError.setup(errno) }
            }
        }
        let receiver = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBufferBytes { setsockopt(receiver, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                guard connect(receiver, address, length) == 0 else {
                    close(receiver)
                    throw PairError.setup(errno)
                }
            }
        }
        let sender = accept(listener, nil, nil)
        guard sender >= 0 else { throw PairError.setup(errno) }
        if var size = sendBufferBytes { setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &size, 4) }
        if !blocking { _ = fcntl(sender, F_SETFL, fcntl(sender, F_GETFL) | O_NONBLOCK) }
        self.sender = sender
        self.receiver = receiver
    }

    deinit {
        close(sender)
        if receiver >= 0 { close(receiver) }
    }

    /// Reads exactly `count` bytes (or throws after the receive timeout).
    func receive(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var have = 0
        while have < count {
            let read = bytes.withUnsafeMutableBytes { recv(receiver, $0.baseAddress! + have, count - have, 0) }
            guard read > 0 else { throw PairError.receive(errno) }
            have += read
        }
        return bytes
    }

    /// Closes the receiving end with a reset (`SO_LINGER` 0).
    func resetReceiver() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(receiver, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(receiver)
        receiver = -1
    }

    enum PairError: Error { case setup(Int32), receive(Int32) }
}
