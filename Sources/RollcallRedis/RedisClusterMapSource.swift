import RollcallEventLoop

/// Asks a Redis Cluster for its slot map (`CLUSTER SLOTS`): first the masters a
/// ``RedisClusterClient`` is connected to, then each seed in turn through a short-lived
/// ``RedisConnection`` (which resolves a host name off the loop and logs in, over TLS for
/// `rediss+cluster://`). Every step waits at most ``RedisTimings/timeoutSeconds``, and a seed
/// whose link fails (refused, a certificate that does not verify) ends its step at once with
/// that reason; the first answer that parses wins. Loop thread only.
final class RedisClusterMapSource {
    /// The map, or why no node gave one.
    typealias Completion = (Result<RedisClusterSlotMap, RedisError>) -> Void

    private let seeds: RedisClusterSeeds
    private let loop: EventLoop
    private let timings: RedisTimings
    private let clientName: String?
    private let tls: RedisTLSContext?
    /// The seed connection of the step under way, if any.
    private var probe: RedisConnection?
    private var deadline: LoopTimer!
    /// Bumped at the end of each step (and by ``close()``): a late outcome of an older step is ignored.
    private var generation: UInt64 = 0
    private var onDeadline: (() -> Void)?
    /// The seed asked first next time: the one that answered last.
    private var firstSeed = 0

    /// A source for `seeds` on `loop`; its seed connections use `tls` for `rediss+cluster://`.
    init(seeds: RedisClusterSeeds, loop: EventLoop, timings: RedisTimings, clientName: String?, tls: RedisTLSContext?) {
        self.seeds = seeds
        self.loop = loop
        self.timings = timings
        self.clientName = clientName
        self.tls = tls
        deadline = LoopTimer(loop: loop) { [unowned self] in onDeadline?() }
    }

    /// Fetches the map, asking `masters` (connected, as `(address, connection)`) before the seeds.
    func fetch(preferring masters: [(RedisHostPort, RedisConnection)], completion: @escaping Completion) {
        endStep()
        var steps: [Step] = masters.map { .master($0.0, $0.1) }
        for offset in 0..<seeds.seeds.count {
            steps.append(.seed((firstSeed + offset) % seeds.seeds.count))
        }
        next(steps[...], failures: [], completion: completion)
    }

    /// Stops a fetch under way (its completion never runs) and closes its seed connection.
    func close() {
        endStep()
    }

    private enum Step {
        case master(RedisHostPort, RedisConnection)
        case seed(Int)
    }

    private func next(_ steps: ArraySlice<Step>, failures: [String], completion: @escaping Completion) {
        guard let step = steps.first else {
            completion(.failure(RedisError(.unavailable, "no node of \(seeds) gave its slot map (\(failures.joined(separator: "; ")))")))
            return
        }
        let current = generation
        let answered: (RedisHostPort, Result<RedisReply, RedisError>) -> Void = { [unowned self] address, result in
            // The first outcome of this step only (a timeout, then the late answer, or the
            // completion a closed seed connection runs, are ignored).
            guard current == generation else { return }
            endStep()
            do {
                let map = try RedisClusterSlotMap(clusterSlots: result.get(), answeredBy: address)
                if case .seed(let index) = step { firstSeed = index }
                completion(.success(map))
            } catch {
                let why = (error as? RedisError).map { "\($0.code.rawValue) \($0.message)" } ?? "\(error)"
                next(steps.dropFirst(), failures: failures + ["\(address): \(why)"], completion: completion)
            }
        }
        switch step {
        case .master(let address, let connection):
            startDeadline { answered(address, .failure(RedisError(.timeout, "no answer within \(self.timings.timeoutSeconds) s"))) }
            connection.send(["CLUSTER", "SLOTS"]) { answered(address, $0) }
        case .seed(let index):
            let address = seeds.seeds[index]
            let probe = RedisConnection(target: .server(seeds.node(at: address)), loop: loop, timings: timings,
                                        clientName: clientName, tls: tls)
            self.probe = probe
            probe.onStateChange = { [unowned probe] state in
                guard state.isConnected else { return }
                probe.send(["CLUSTER", "SLOTS"]) { answered(address, $0) }
            }
            // A seed that cannot be reached (refused, a certificate that does not verify) ends
            // its step on the loop's next turn, with that reason: the next seed is asked at once.
            var failure: RedisError?
            probe.onLinkFailure = { [unowned self] error in
                failure = error
                deadline.schedule(after: 0)
            }
            startDeadline {
                answered(address, .failure(failure ?? RedisError(.timeout, "not connected and answered within \(self.timings.timeoutSeconds) s")))
            }
            probe.start()
        }
    }

    private func startDeadline(_ fire: @escaping () -> Void) {
        onDeadline = fire
        deadline.schedule(after: timings.timeoutSeconds)
    }

    /// Ends the step under way: later outcomes of it are ignored, its deadline is cancelled
    /// and its seed connection closed.
    private func endStep() {
        generation += 1
        deadline.cancel()
        onDeadline = nil
        guard let probe else { return }
        self.probe = nil
        probe.onStateChange = nil
        probe.onLinkFailure = nil
        // Closing runs the connection's pending completions: their answers are ignored (generation).
        probe.close()
    }
}
