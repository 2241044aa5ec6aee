import RollcallEventLoop

/// Resolves the host names of Redis links without blocking the loop (PROTOCOL §9: "resolved
/// without blocking the node, again at every reconnect"): a name goes to a
/// ``BackgroundResolver`` thread and its answer comes back on the loop through a
/// ``LoopWakeup``; an address literal is answered at once. hiredis is then given the numeric
/// address, so its own blocking `getaddrinfo` never waits for DNS. Loop thread only.
final class HostResolver {
    /// A numeric address, or why there is none.
    typealias Completion = (Result<String, RedisError>) -> Void

    private let loop: EventLoop
    private var background: BackgroundResolver!
    private var wakeup: LoopWakeup!
    private var waiting: [UInt64: Waiting] = [:]
    private var tickets: UInt64 = 0

    private struct Waiting {
        let host: String
        let completion: Completion
        let deadline: LoopTimer
    }

    /// A resolver on `loop`.
    init(loop: EventLoop) {
        self.loop = loop
        wakeup = LoopWakeup(loop: loop) { [unowned self] in answersArrived() }
        background = BackgroundResolver { [wakeup] in wakeup?.signal() }
    }

    /// Resolves `host`: a literal at once, a name on a thread, failing with
    /// ``RedisError/Code/unresolved`` when it does not resolve or takes longer than `timeout`
    /// seconds (the lookup's late answer is then dropped).
    func resolve(_ host: String, timeout: Double, _ completion: @escaping Completion) {
        guard AddressResolver.isName(host) else {
            completion(.success(host))
            return
        }
        tickets += 1
        let ticket = tickets
        let deadline = LoopTimer(loop: loop) { [unowned self] in
            finish(ticket, .failure(RedisError(.unresolved, "the host \(host) did not resolve within \(timeout) s")))
        }
        waiting[ticket] = Waiting(host: host, completion: completion, deadline: deadline)
        deadline.schedule(after: timeout)
        background.resolve(host, ticket: ticket)
    }

    /// Drops every lookup under way (no completion runs) and stops the wake-ups: call before
    /// the loop goes away (the wake-up's watcher is stopped here, not when the value goes).
    func close() {
        background.stop()
        wakeup = nil
        for entry in waiting.values { entry.deadline.cancel() }
        waiting.removeAll()
    }

    deinit { background.stop() }

    private func answersArrived() {
        for answer in background.takeAnswers() {
            guard let host = waiting[answer.ticket]?.host else { continue }
            if let address = answer.address {
                finish(answer.ticket, .success(address))
            } else {
                finish(answer.ticket, .failure(RedisError(.unresolved, "the host \(host) does not resolve")))
            }
        }
    }

    private func finish(_ ticket: UInt64, _ result: Result<String, RedisError>) {
        guard let entry = waiting.removeValue(forKey: ticket) else { return }
        entry.deadline.cancel()
        entry.completion(result)
    }
}
