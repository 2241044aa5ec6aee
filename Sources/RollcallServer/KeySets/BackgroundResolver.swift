import CRollcallShim
import Foundation

/// Resolves host names off the service thread: each lookup (a blocking `getaddrinfo`) runs on
/// a short-lived thread of its own, and its answer waits here until the service thread takes
/// it (``takeAnswers()``), woken by `lws_cancel_service` (`LWS_CALLBACK_EVENT_WAIT_CANCELLED`).
/// The service loop never waits for DNS.
final class BackgroundResolver: @unchecked Sendable {
    /// One finished lookup: the ticket it was asked with and the numeric address (nil: the
    /// name did not resolve).
    typealias Answer = (ticket: UInt64, address: String?)

    private let lock = NSLock()
    private var answers: [Answer] = []
    /// The context to wake; nil once stopped (a late answer is then dropped, never delivered
    /// to a destroyed context).
    private var context: OpaquePointer?

    /// A resolver that wakes `context`'s service loop.
    init(context: OpaquePointer) {
        self.context = context
    }

    /// Starts resolving `host` (IPv4 preferred, as ``AddressResolver``); the answer comes back
    /// with `ticket`.
    func resolve(_ host: String, ticket: UInt64) {
        let thread = Thread { [self] in
            let address = AddressResolver.numericAddress(for: host)
            lock.lock()
            defer { lock.unlock() }
            guard let context else { return }
            answers.append((ticket, address))
            lws_cancel_service(context)
        }
        thread.name = "rollcall-resolve"
        thread.start()
    }

    /// The lookups finished since the last call (service thread).
    func takeAnswers() -> [Answer] {
        lock.lock()
        defer { lock.unlock() }
        let taken = answers
        answers.removeAll()
        return taken
    }

    /// No more wake-ups: call before the context is destroyed.
    func stop() {
        lock.lock()
        context = nil
        answers.removeAll()
        lock.unlock()
    }
}
