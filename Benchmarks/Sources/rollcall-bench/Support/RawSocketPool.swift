import CBenchEpoll
import Foundation

/// Threads that each wait on their own epoll set and read their ``RawWebSocket``s with plain
/// non-blocking reads (64 KiB at a time, one buffer per thread), so the bench spends its CPU
/// on the broker's bytes rather than on a client library. Connections are spread round-robin.
final class RawSocketPool: @unchecked Sendable {
    private let workers: [Worker]
    private var next = 0
    /// Every connection offers permessage-deflate and inflates what arrives compressed.
    let deflate: Bool

    init(threads: Int, deflate: Bool = false) {
        self.deflate = deflate
        workers = (0..<max(1, threads)).map { Worker(name: "raw-\($0)") }
        for worker in workers { worker.start() }
    }

    /// Opens a connection to the broker on `port` and adds it to a thread; `configure` runs
    /// before the first byte is read (set `onLine` / `onClose` there).
    /// `path` and `subprotocol` are the upgrade's (mosquitto: `/mqtt`, `mqtt`).
    func open(port: Int, path: String = "/v1", subprotocol: String = "rollcall.v1",
              configure: (RawWebSocket) -> Void) throws -> RawWebSocket {
        let connection = try RawWebSocket(port: port, path: path, subprotocol: subprotocol, deflate: deflate)
        configure(connection)
        addToNextWorker(connection)
        return connection
    }

    /// Opens `count` connections like ``open(port:path:subprotocol:configure:)``, with up to
    /// `parallel` upgrades in flight on as many plain threads (a broker that answers each
    /// upgrade only at its next loop turn — mosquitto, about 0.1 s — takes one turn per batch
    /// instead of one per connection). `configure` runs in index order, before each
    /// connection's first byte is read; a failed one is nil.
    func open(count: Int, parallel: Int = 64, port: Int, path: String = "/v1", subprotocol: String = "rollcall.v1",
              configure: (Int, RawWebSocket) -> Void) -> [RawWebSocket?] {
        let opened = LockedArray<RawWebSocket?>(repeating: nil, count: count)
        let threads = max(1, min(parallel, count))
        let done = DispatchSemaphore(value: 0)
        for first in 0..<threads {
            Thread { [deflate] in
                for index in stride(from: first, to: count, by: threads) {
                    opened[index] = try? RawWebSocket(port: port, path: path, subprotocol: subprotocol, deflate: deflate)
                }
                done.signal()
            }.start()
        }
        for _ in 0..<threads { done.wait() }
        return (0..<count).map { index in
            guard let connection = opened[index] else { return nil }
            configure(index, connection)
            addToNextWorker(connection)
            return connection
        }
    }

    /// Hands a configured connection to the threads in turn (round-robin).
    private func addToNextWorker(_ connection: RawWebSocket) {
        workers[next % workers.count].add(connection)
        next += 1
    }

    /// Stops every thread and closes the connections still open.
    func shutdown() {
        for worker in workers { worker.stop() }
    }

    private final class Worker: @unchecked Sendable {
        let epoll = bench_epoll_create()
        let name: String
        private let lock = NSLock()
        private var connections: [Int32: RawWebSocket] = [:]
        private var stopping = false
        private let stopped = DispatchSemaphore(value: 0)

        init(name: String) { self.name = name }

        func start() {
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        }

        func add(_ connection: RawWebSocket) {
            lock.lock()
            connections[connection.fd] = connection
            lock.unlock()
            bench_epoll_add(epoll, connection.fd)
        }

        func stop() {
            lock.lock()
            stopping = true
            lock.unlock()
            stopped.wait()
        }

        private func run() {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            let events = UnsafeMutablePointer<Int32>.allocate(capacity: 256)
            defer {
                buffer.deallocate()
                events.deallocate()
                lock.lock()
                let left = Array(connections.values)
                connections.removeAll()
                lock.unlock()
                for connection in left { connection.markClosed() }
                close(epoll)
                stopped.signal()
            }
            while true {
                lock.lock()
                let done = stopping
                lock.unlock()
                if done { return }
                let ready = bench_epoll_wait(epoll, events, 256, 50)
                guard ready > 0 else { continue }
                for index in 0..<Int(ready) {
                    let fd = events[index]
                    lock.lock()
                    let connection = connections[fd]
                    lock.unlock()
                    guard let connection else { continue }
                    if !connection.readAvailable(into: buffer) {
                        bench_epoll_remove(epoll, fd)
                        lock.lock()
                        connections[fd] = nil
                        lock.unlock()
                        connection.markClosed()
                    }
                }
            }
        }
    }
}
