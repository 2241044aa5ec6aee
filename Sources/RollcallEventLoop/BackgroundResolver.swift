import Foundation

/// Resolves host names off the service thread: each lookup (a blocking `getaddrinfo`) runs on
/// a short-lived thread of its own, and its answer waits here until the loop's thread takes
/// it (``takeAnswers()``) after `wake` told it to: `lws_cancel_service` for the broker's
/// context (`LWS_CALLBACK_EVENT_WAIT_CANCELLED`: the key set fetcher), a ``LoopWakeup`` for a
/// loop of its own (the Redis links). The loop never waits for DNS.
public final class BackgroundResolver: @unchecked Sendable {
    /// One finished lookup: the ticket it was asked with and the numeric address (nil: the
    /// name did not resolve).
    public typealias Answer = (ticket: UInt64, address: String?)

    private let lock = NSLock()
    private var answers: [Answer] = []
    /// Tells the loop's thread an answer waits; nil once stopped (a late answer is then
    /// dropped, and nothing it would wake is touched).
    private var wake: (() -> Void)?

    /// A resolver that calls `wake` (on the lookup's thread, under the resolver's lock) each
    /// time an answer is ready.
    public init(wake: @escaping () -> Void) {
        self.wake = wake
    }

    /// Starts resolving `host` (IPv4 preferred, as ``AddressResolver``); the answer comes back
    /// with `ticket`.
    public func resolve(_ host: String, ticket: UInt64) {
        let thread = Thread { [self] in
            let address = AddressResolver.numericAddress(for: host)
            lock.lock()
            defer { lock.unlock() }
            guard let wake else { return }
            answers.append((ticket, address))
            wake()
        }
        thread.name = "rollcall-resolve"
        thread.start()
    }

    /// The lookups finished since the last call (loop's thread).
    public func takeAnswers() -> [Answer] {
        lock.lock()
        defer { lock.unlock() }
        let taken = answers
        answers.removeAll()
        return taken
    }

    /// No more wake-ups: call before what `wake` touches goes away (once it returns no
    /// lookup thread is inside `wake`, nor will be).
    public func stop() {
        lock.lock()
        wake = nil
        answers.removeAll()
        lock.unlock()
    }
}
