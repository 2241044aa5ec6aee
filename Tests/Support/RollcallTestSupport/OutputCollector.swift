import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child's stdout and stderr, read from its pipes by one plain thread per pipe.
///
/// Each thread does blocking `read(2)` until end of file and then closes its descriptor: the
/// reader is the only owner, so the number is closed exactly once and never while anything
/// else (a dispatch source, a `FileHandle`) still watches it. libdispatch on Linux crashes its
/// epoll manager thread (`_dispatch_event_loop_drain`) when a descriptor registered with a
/// source is closed, or closed and reused, before the source is cancelled — which is what
/// `FileHandle.readabilityHandler` plus a `FileHandle` closed on deallocation did.
public final class OutputCollector: @unchecked Sendable {
    /// Which of the child's streams a pipe carries.
    public enum Stream: Sendable { case stdout, stderr }

    private let cond = NSCondition()
    private var stdout = Data()
    private var stderr = Data()
    private var openStreams = 0
    private var stdoutClosed = false

    init() {}

    /// Starts a thread that reads `fd` into `stream` until end of file, then closes `fd`.
    /// The caller gives up `fd`: nothing else may read, close or watch it afterwards.
    func read(_ fd: Int32, into stream: Stream) {
        cond.withLock { openStreams += 1 }
        // The thread holds the collector until end of file.
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                append(buffer[0..<count], to: stream)
            }
            Glibc.close(fd)
            finish(stream)
        }
        thread.name = "child-\(stream)-reader"
        thread.start()
    }

    private func append(_ bytes: ArraySlice<UInt8>, to stream: Stream) {
        cond.lock()
        switch stream {
        case .stdout: stdout.append(contentsOf: bytes)
        case .stderr: stderr.append(contentsOf: bytes)
        }
        cond.broadcast()
        cond.unlock()
    }

    private func finish(_ stream: Stream) {
        cond.lock()
        openStreams -= 1
        if stream == .stdout { stdoutClosed = true }
        cond.broadcast()
        cond.unlock()
    }

    /// Waits until both streams reached end of file (the child exited and closed them).
    @discardableResult
    public func waitForEOF(timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while openStreams > 0 {
            if !cond.wait(until: deadline) { return openStreams == 0 }
        }
        return true
    }

    /// Everything read from stdout so far.
    public var stdoutText: String { cond.withLock { String(decoding: stdout, as: UTF8.self) } }
    /// Everything read from stderr so far.
    public var stderrText: String { cond.withLock { String(decoding: stderr, as: UTF8.self) } }

    /// Waits until stderr contains `text`.
    public func waitForStderr(containing text: String, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while !String(decoding: stderr, as: UTF8.self).contains(text) {
            if !cond.wait(until: deadline) { return String(decoding: stderr, as: UTF8.self).contains(text) }
        }
        return true
    }

    /// Waits for a complete stdout line starting with `prefix`; nil at the deadline, or at once
    /// when stdout ended without one (the child exited, e.g. refusing its config).
    public func waitForStdoutLine(prefix: String, timeout: TimeInterval) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while true {
            let text = String(decoding: stdout, as: UTF8.self)
            if let line = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                .first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count))
            }
            if stdoutClosed { return nil }
            if !cond.wait(until: deadline) { return nil }
        }
    }

    /// Waits for the stdout line `<prefix>…:<port>` a server prints once it listens; the port,
    /// or nil as ``waitForStdoutLine(prefix:timeout:)`` is (or when the line ends in no number).
    public func waitForListeningPort(prefix: String, timeout: TimeInterval) -> Int? {
        waitForStdoutLine(prefix: prefix, timeout: timeout)?.split(separator: ":").last.flatMap { Int($0) }
    }
}
