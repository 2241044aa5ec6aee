import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, with an empty signal mask and default signal
/// dispositions, and no descriptor of the test process but its own stdin, stdout and stderr.
///
/// Foundation's `Process` passes on the spawning thread's signal mask, and test threads
/// (libdispatch workers) block most signals, so a broker started that way would never see
/// SIGTERM. Its stdout and stderr are read into ``output`` by two plain threads, one per pipe,
/// with blocking `read(2)`: no dispatch source or `FileHandle` ever sees these descriptors
/// (docs/testing.md, "Descriptors: closing and spawning in the test process").
public final class ChildProcess: @unchecked Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// Everything the child writes to stdout and stderr.
    public let output = OutputCollector()
    private let cond = NSCondition()
    private var waitStatus: Int32?
    private static let spawnLock = NSLock()

    /// Starts `executable`; `blockedSignals` are blocked in the child's initial signal mask
    /// (to check that a program unblocks what it needs).
    public init(executable: String, arguments: [String], directory: String, blockedSignals: [Int32] = []) throws {
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        // Close-on-exec, so children spawned concurrently by other tests do not inherit these
        // pipes (dup2 in the child clears the flag on its own stdout/stderr). The lock keeps
        // another spawn from slipping in between pipe() and fcntl().
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        guard pipe(&outPipe) == 0 else { throw TestSupportError("pipe() failed") }
        guard pipe(&errPipe) == 0 else {
            Glibc.close(outPipe[0]); Glibc.close(outPipe[1])
            throw TestSupportError("pipe() failed")
        }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        for fd in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Nothing else: most descriptors of the test process are not close-on-exec (lws
        // client sockets, raw sockets), and a child holding a copy keeps a TCP connection
        // the test closed open for its peer.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        for number in blockedSignals { sigaddset(&empty, number) }
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        // `env -C` changes directory (posix_spawn_file_actions_addchdir_np is not importable).
        let launcher = "/usr/bin/env"
        let argv = ([launcher, "-C", directory, executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, launcher, &actions, &attributes, argv, environ)
        Glibc.close(outPipe[1])
        Glibc.close(errPipe[1])
        guard result == 0 else {
            Glibc.close(outPipe[0]); Glibc.close(errPipe[0])
            throw TestSupportError("posix_spawn \(executable) failed: \(result)")
        }
        pid = child
        // From here on the read ends belong to the reader threads, which close them at EOF.
        output.read(outPipe[0], into: .stdout)
        output.read(errPipe[0], into: .stderr)

        let thread = Thread { [cond, pid = child, weak self] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            cond.lock()
            self?.waitStatus = status
            cond.broadcast()
            cond.unlock()
        }
        thread.start()
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), looked up at run time: the
    /// Glibc module leaves out the GNU extensions of `spawn.h`.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Sends `signal` to the child.
    public func send(_ signal: Int32) { _ = Glibc.kill(pid, signal) }

    /// The raw `waitpid` status once the child has exited.
    public var status: Int32? { cond.withLock { waitStatus } }

    /// Waits up to `timeout` for the exit; returns the raw status.
    public func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while waitStatus == nil {
            if !cond.wait(until: deadline) { break }
        }
        return waitStatus
    }
}
