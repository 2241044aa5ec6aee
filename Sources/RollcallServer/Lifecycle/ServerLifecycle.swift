import CRollcallShim
import Foundation

/// The server's life as other threads see it: the service thread's start, stop requests and
/// signals, and the semaphores ``BrokerServer/start()`` and ``BrokerServer/wait()`` block on.
/// It is the only part of the server that threads other than the service thread touch; its
/// lock guards the context stop requests wake and the signal handlers' target.
final class ServerLifecycle: @unchecked Sendable {
    /// The flag a stop request or a signal sets; the service loop reads it every turn.
    let stopFlag: UnsafeMutablePointer<rollcall_stop_flag_t>
    private let lock = NSLock()
    private var started = false
    /// The context a stop request wakes (nil before it exists and once the loop ended).
    private var contextForStopRequests: OpaquePointer?
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled once by the service thread when the cluster link is first connected.
    private let clusterConnected = DispatchSemaphore(value: 0)
    /// The service thread's side of ``clusterConnected``: already signalled.
    private var clusterConnectedSignalled = false
    /// Signalled once by the service thread when the first fetch of `auth.jwksUrl` is over.
    private let keySetFetched = DispatchSemaphore(value: 0)
    /// Why the first fetch of `auth.jwksUrl` cannot start the broker (set before ``keySetFetched``).
    private var keySetError: ServerError?

    /// The name of the service thread, as `top -H`, `ps -L` and a debugger show it. Linux takes
    /// at most 15 bytes (a longer name is refused and the thread keeps the process's name).
    static let threadName = "rollcall-loop"

    init() {
        stopFlag = .allocate(capacity: 1)
        stopFlag.initialize(to: rollcall_stop_flag_t())
    }

    deinit {
        // The handler may hold the flag: the default action comes back before it is freed.
        if rollcall_stop_signal_flag() == stopFlag { rollcall_install_stop_signals(nil, nil) }
        stopFlag.deallocate()
    }

    // MARK: The service thread

    /// Starts the service thread: `prepare` first, on the calling thread (checks that can
    /// fail before any thread exists); then the thread runs `create` (which makes the context
    /// and returns the bound port and the context), and, when that succeeded, `serve` until
    /// the service loop ends. Returns the port once `create` is done; throws the error of
    /// `prepare` or `create`, or ``ServerError/Code/alreadyStarted`` the second time.
    func startServiceThread(
        prepare: () throws(ServerError) -> Void,
        create: @escaping () -> (Result<Int, ServerError>, OpaquePointer?), serve: @escaping () -> Void
    ) throws(ServerError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        guard !started else { throw ServerError(.alreadyStarted, "the server was already started") }
        started = true
        try prepare()
        let ready = DispatchSemaphore(value: 0)
        let outcome = StartOutcome()
        let thread = Thread { [self] in
            _ = rollcall_name_this_thread(Self.threadName)
            let (result, context) = create()
            outcome.result = result
            if case .success = result {
                // start() holds the lock while it waits for `ready`: no other thread reads this meanwhile.
                contextForStopRequests = context
                ready.signal()
                serve()
            } else {
                ready.signal()
            }
            finished.signal()
        }
        thread.start()
        ready.wait()
        return try outcome.result.get()
    }

    /// The service loop is over (service thread): stop requests and signals no longer wake it.
    /// SIGTERM and SIGINT stay caught (they only set the flag) until this object goes: a stop
    /// signal repeated while the broker closes its links and its context (a supervisor or a
    /// test harness sending SIGTERM again) must not kill it half-way with the default action
    /// (seen in make test-browser: a node of three exited -15 instead of 0).
    func serviceLoopEnded() {
        lock.lock()
        defer { lock.unlock() }
        rollcall_install_stop_signals(nil, stopFlag)
        contextForStopRequests = nil
    }

    /// Blocks until the service thread has ended (at once when it has). Any thread.
    func wait() {
        finished.wait()
        finished.signal()
    }

    // MARK: Stopping

    /// Asks for a graceful shutdown: sets the flag and wakes the loop. Any thread.
    func requestStop() {
        lock.lock()
        defer { lock.unlock() }
        rollcall_request_stop(contextForStopRequests, stopFlag)
    }

    /// True once a stop was requested (by ``requestStop()`` or a signal).
    var stopRequested: Bool { rollcall_stop_requested(stopFlag) != 0 }

    /// Makes SIGINT and SIGTERM request a stop (and ignores SIGPIPE). Any thread.
    func installSignalHandlers() {
        lock.lock()
        defer { lock.unlock() }
        rollcall_install_stop_signals(contextForStopRequests, stopFlag)
    }

    /// Runs `body` under the lock (``BrokerServer/start()`` waits for the cluster link so).
    func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    // MARK: What start() waits for

    /// The first fetch of the key set is over (service thread); `error` says why the broker
    /// cannot start, nil when it can.
    func keySetFetched(_ error: ServerError?) {
        keySetError = error
        keySetFetched.signal()
    }

    /// Waits for ``keySetFetched(_:)``; returns its error.
    func waitForKeySet() -> ServerError? {
        keySetFetched.wait()
        return keySetError
    }

    /// The cluster link is connected (service thread, every loop turn while it is): the first
    /// call releases ``waitForClusterLink(seconds:)``, later ones do nothing.
    func clusterLinkConnected() {
        guard !clusterConnectedSignalled else { return }
        clusterConnectedSignalled = true
        clusterConnected.signal()
    }

    /// Waits at most `seconds` for ``clusterLinkConnected()``; false when the time ran out.
    func waitForClusterLink(seconds: Double) -> Bool {
        clusterConnected.wait(timeout: .now() + seconds) == .success
    }

    /// Hands the service thread's start result to `startServiceThread` (ordered by the semaphore).
    private final class StartOutcome: @unchecked Sendable {
        var result: Result<Int, ServerError> = .failure(ServerError(.listenFailed, "not started"))
    }
}
