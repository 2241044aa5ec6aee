import CBenchEpoll
import Foundation

/// The receiving side of a floor broadcast (``RawBroadcast``, ``LWSBroadcast``): threads that
/// read and discard whatever arrives on their sockets, on epoll, as clients would. Sockets are
/// dealt round-robin, like the bench's members over its reader threads.
final class DrainThreads {
    private let epolls: [Int32]
    private var added = 0
    private let stop = LockedArray<Bool>(repeating: false, count: 1)
    private let drained = DispatchSemaphore(value: 0)
    private var running = 0

    /// Starts `count` (at least 1) threads with no sockets yet.
    init(count: Int) {
        epolls = (0..<max(1, count)).map { _ in bench_epoll_create() }
        for epoll in epolls {
            running += 1
            Thread { [stop, drained] in
                var buffer = [UInt8](repeating: 0, count: 65536)
                var ready = [Int32](repeating: 0, count: 256)
                while !stop[0] {
                    let n = bench_epoll_wait(epoll, &ready, 256, 20)
                    for index in 0..<Int(n) { while read(ready[index], &buffer, buffer.count) > 0 {} }
                }
                drained.signal()
            }.start()
        }
    }

    deinit { stopAll() }

    /// Makes `fd` non-blocking and hands it to the next thread in turn.
    func add(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        bench_epoll_add(epolls[added % epolls.count], fd)
        added += 1
    }

    /// Ends the threads and closes their epoll descriptors (not the sockets). Idempotent.
    func stopAll() {
        guard running > 0 else { return }
        stop[0] = true
        for _ in 0..<running { drained.wait() }
        running = 0
        for epoll in epolls { Glibc.close(epoll) }
    }
}
