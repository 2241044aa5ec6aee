import CBenchEpoll
import CSendBatch
import Foundation

/// What one frame write costs on this machine, measured in the bench's own process: `count`
/// loopback TCP connections (64 KiB send buffers, like the broker's), one thread writing the
/// same ~200-byte WebSocket text frame (``probeEventFrame``) to each in turn — the broker's broadcast with nothing
/// of the broker, nor of lws — while reader threads read and discard on epoll, as clients
/// would: the kernel's share of a frame write. The target's floor is the same broadcast
/// through lws (``LWSBroadcast``), which issue 16 §4 names; this one shows what lws adds.
///
/// The readers matter: on a two-core machine a loopback `write` runs the receiving side's
/// TCP processing and wakes the reading thread, and a second reading thread shares the
/// writer's core. So the latency bench reads these sockets with as many threads as read its
/// members (`readerThreads`), and runs its rounds between probes, in the same seconds as the
/// broker's broadcasts (BENCHMARKS.md, Issue 16 §4, session 8).
///
/// With `writerThreads` > 1 the same broadcast is split over that many writer threads, each
/// owning a contiguous share of the sockets and reading the one frame (shared, read-only):
/// no lock is taken while writing, only a semaphore per thread to start and end a round. The
/// figure is then the round's wall-clock time ÷ the sockets, so it compares directly with
/// one thread's: what a broker that spread its fan-out writes over threads could reach.
final class RawBroadcast {
    private var writers: [Int32] = []
    private var readers: [Int32] = []
    private var drain: DrainThreads?
    private let frame: [UInt8]
    private var split: SplitWriters?
    /// An io_uring for ``batchedRound()``, made at the first round.
    private var batch: OpaquePointer?
    /// The kernel refused that ring: not asked again.
    private var batchRefused = false

    /// Opens `count` connected socket pairs read by `readerThreads` threads (sockets dealt
    /// round-robin, like the bench's members); nil when the sockets could not be set up.
    init?(sockets count: Int, readerThreads: Int = 1, writerThreads: Int = 1) {
        frame = Self.probeEventFrame
        guard connect(count, readerThreads: max(1, readerThreads)) else {
            close()
            return nil
        }
        split = SplitWriters(sockets: writers, threads: writerThreads, frame: frame)
    }

    deinit { close() }

    /// JSON shaped like the probe's `stateChanged` as the broker sends it to a member (205
    /// bytes: the same length, so the same frame header and copy).
    static let probeEventPayload = Array(#"{"event":"presence","type":"stateChanged","channel":"bench:latency","channelType":"message","publisher":"m0","state":{"probe":"123"},"occupancy":1000,"mode":"announce","seq":1234,"timestamp":1795553610238}"#.utf8)

    /// ``probeEventPayload`` as one unmasked WebSocket text frame, as a server writes it.
    static let probeEventFrame: [UInt8] = {
        let payload = probeEventPayload
        precondition(payload.count >= 126 && payload.count < 65536)
        return [0x81, 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }()

    /// One broadcast of the frame to every socket; wall-clock microseconds per write.
    func round() -> Double {
        let start = MonotonicSeconds.now
        if let split {
            split.broadcast()
        } else {
            frame.withUnsafeBytes { bytes in
                for fd in writers { _ = write(fd, bytes.baseAddress, bytes.count) }
            }
        }
        return (MonotonicSeconds.now - start) / Double(writers.count) * 1e6
    }

    /// The same broadcast as one io_uring submission of `send`s (`MSG_DONTWAIT`), as the
    /// broker's batched sends make it (docs/transport.md, "Batched sends"): wall-clock
    /// microseconds per write, or nil where this kernel gives no io_uring.
    func batchedRound() -> Double? {
        if batch == nil, !batchRefused {
            var error: Int32 = 0
            batch = rollcall_send_batch_create(1024, &error)
            batchRefused = batch == nil
        }
        guard let batch else { return nil }
        return frame.withUnsafeBufferPointer { bytes -> Double in
            let frameAddresses = [UnsafePointer<UInt8>?](repeating: bytes.baseAddress, count: writers.count)
            let frameLengths = [UInt32](repeating: UInt32(bytes.count), count: writers.count)
            var results = [Int32](repeating: 0, count: writers.count)
            let start = MonotonicSeconds.now
            _ = writers.withUnsafeBufferPointer { fds in
                frameAddresses.withUnsafeBufferPointer { buffers in
                    frameLengths.withUnsafeBufferPointer { lengths in
                        results.withUnsafeMutableBufferPointer { results in
                            rollcall_send_batch_run(batch, fds.baseAddress, buffers.baseAddress, lengths.baseAddress,
                                                    results.baseAddress, fds.count)
                        }
                    }
                }
            }
            return (MonotonicSeconds.now - start) / Double(writers.count) * 1e6
        }
    }

    /// Ends the reader (and writer) threads and closes the sockets. Idempotent.
    func close() {
        rollcall_send_batch_destroy(batch)
        batch = nil
        split?.stop()
        split = nil
        drain?.stopAll()
        drain = nil
        for fd in writers + readers { Glibc.close(fd) }
        writers = []
        readers = []
    }

    private func connect(_ count: Int, readerThreads: Int) -> Bool {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { return false }
        defer { Glibc.close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, 1024) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { return false }
        let drain = DrainThreads(count: readerThreads)
        self.drain = drain
        for _ in 0..<count {
            let reader = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard reader >= 0 else { return false }
            readers.append(reader)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(reader, $0, length) == 0 }
            }
            let writer = accept(listener, nil, nil)
            guard connected, writer >= 0 else { return false }
            writers.append(writer)
            var sendBuffer: Int32 = 64 * 1024
            var noDelay: Int32 = 1
            setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(writer, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            drain.add(reader)
        }
        return true
    }

    /// Median microseconds per write over `rounds` broadcasts 10 ms apart, on sockets of its
    /// own; nil when they could not be set up.
    static func microsecondsPerWrite(sockets count: Int, rounds: Int = 100, writerThreads: Int = 1,
                                     readerThreads: Int = 1) -> Double? {
        guard let broadcast = RawBroadcast(sockets: count, readerThreads: readerThreads, writerThreads: writerThreads) else {
            return nil
        }
        defer { broadcast.close() }
        var perWrite: [Double] = []
        for _ in 0..<rounds {
            perWrite.append(broadcast.round())
            usleep(10_000)
        }
        return LatencyReport.percentile(perWrite, 50)
    }
}

/// Writer threads that each own a contiguous share of the sockets and write the same frame to
/// every socket of their share when a round starts; nil for a single thread.
private final class SplitWriters: @unchecked Sendable {
    private let starts: [DispatchSemaphore]
    private let done = DispatchSemaphore(value: 0)
    private var stopping = false

    init?(sockets: [Int32], threads: Int, frame: [UInt8]) {
        guard threads > 1 else { return nil }
        starts = (0..<threads).map { _ in DispatchSemaphore(value: 0) }
        let share = (sockets.count + threads - 1) / threads
        for index in 0..<threads {
            let mine = Array(sockets[min(index * share, sockets.count)..<min((index + 1) * share, sockets.count)])
            let start = starts[index]
            Thread { [self] in
                frame.withUnsafeBytes { bytes in
                    while true {
                        start.wait()
                        if stopping { break }
                        for fd in mine { _ = write(fd, bytes.baseAddress, bytes.count) }
                        done.signal()
                    }
                }
                done.signal()
            }.start()
        }
    }

    /// One round: every thread writes its share; returns when all have.
    func broadcast() {
        for start in starts { start.signal() }
        for _ in starts { done.wait() }
    }

    /// Ends the threads (after the last round).
    func stop() {
        stopping = true
        for start in starts { start.signal() }
        for _ in starts { done.wait() }
    }
}
