import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of one port (a cluster node's link to Redis), whose link
/// the chaos suite can cut and freeze: POSIX sockets, one thread per direction of each
/// connection, no polling.
///
/// - ``cut()`` ends every connection (both sides see the end) and, until ``restore()``, ends
///   each new one as soon as it is accepted: the node's Redis link is down.
/// - ``freeze()`` keeps every connection open but lets nothing cross it, either way, and new
///   connections are accepted and frozen too: Redis looks alive to the kernel and silent to the
///   node. ``restore()`` lets the held bytes through.
///
/// Descriptors follow docs/testing.md ("Descriptors"): each is closed once, by the thread that
/// owns it; ``cut()`` and ``stop()`` only shut down, under the lock under which owners close.
final class LinkProxy: @unchecked Sendable {
    /// What the proxy does with bytes and connections.
    enum Mode: String, Sendable {
        case open, cut, frozen
    }

    /// The port the proxy listens on (what the node is given).
    let port: Int
    /// The port it forwards to (Redis).
    let targetPort: Int
    private let listener: Int32
    private let cond = NSCondition()
    private var mode = Mode.open
    private var pairs: [ObjectIdentifier: Pair] = [:]
    private var stopped = false
    private var listenerClosed = false

    /// One proxied connection: the accepted socket and the one to the target. The second of
    /// its two threads to finish closes both (under the proxy's lock).
    private final class Pair {
        let client: Int32
        let server: Int32
        var finished = 0
        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }
    }

    /// Listens on a free loopback port and forwards to 127.0.0.1:`targetPort`.
    init(targetPort: Int) throws {
        self.targetPort = targetPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw HarnessError("LinkProxy: socket() failed") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)  // nothing else holds it yet
            throw HarnessError("LinkProxy: cannot listen: errno \(errno)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: actual.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// The current mode.
    var currentMode: Mode { cond.withLock { mode } }

    /// How many connections are proxied now.
    var connectionCount: Int { cond.withLock { pairs.count } }

    /// Ends every connection and refuses new ones until ``restore()``.
    func cut() {
        cond.withLock {
            mode = .cut
            for pair in pairs.values {
                shutdown(pair.client, Int32(SHUT_RDWR))
                shutdown(pair.server, Int32(SHUT_RDWR))
            }
            cond.broadcast()
        }
    }

    /// Lets nothing cross any connection, old or new, until ``restore()`` or ``cut()``.
    func freeze() {
        cond.withLock { mode = .frozen }
    }

    /// Forwards again (bytes held by a freeze go through).
    func restore() {
        cond.withLock {
            mode = .open
            cond.broadcast()
        }
    }

    /// Stops listening and ends every connection; returns once the listener is closed.
    func stop() {
        cond.lock()
        defer { cond.unlock() }
        guard !stopped else { return }
        stopped = true
        mode = .cut
        if !listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        for pair in pairs.values {
            shutdown(pair.client, Int32(SHUT_RDWR))
            shutdown(pair.server, Int32(SHUT_RDWR))
        }
        cond.broadcast()
        let deadline = Date(timeIntervalSinceNow: 5)
        while !listenerClosed && cond.wait(until: deadline) {}
    }

    deinit { stop() }

    // MARK: - Forwarding

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                cond.withLock {
                    close(listener)
                    listenerClosed = true
                    cond.broadcast()
                }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // children are spawned with closefrom too (ChildProcess)
            if cond.withLock({ mode == .cut || stopped }) {
                close(fd)  // the link is cut: the node sees its connection end at once
                continue
            }
            guard let server = connectToTarget() else {
                close(fd)  // the target is down: so is the link
                continue
            }
            let pair = Pair(client: fd, server: server)
            cond.withLock { pairs[ObjectIdentifier(pair)] = pair }
            Thread { [self] in forward(pair, from: pair.client, to: pair.server) }.start()
            Thread { [self] in forward(pair, from: pair.server, to: pair.client) }.start()
        }
    }

    private func connectToTarget() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = Self.loopback(port: targetPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Copies `from` → `to` until either side ends or the link is cut; waits while frozen.
    private func forward(_ pair: Pair, from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        loop: while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            cond.lock()
            while mode == .frozen { cond.wait() }
            let cut = mode == .cut
            cond.unlock()
            if cut { break }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { break loop }
                sent += written
            }
        }
        cond.withLock {
            // Ends the other direction too; the second thread to get here closes both.
            shutdown(pair.client, Int32(SHUT_RDWR))
            shutdown(pair.server, Int32(SHUT_RDWR))
            pair.finished += 1
            if pair.finished == 2 {
                close(pair.client)
                close(pair.server)
                pairs[ObjectIdentifier(pair)] = nil
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
