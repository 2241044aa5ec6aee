import RollcallEventLoop

/// One question to one sentinel on a short-lived link of its own: connect (to a numeric
/// address), `SENTINEL get-master-addr-by-name <name>`, read the answer, close. A sentinel that
/// requires a password (`requirepass`) answers `NOAUTH`: the question is then asked again after
/// `AUTH` with `credentials` (the URL's), so a sentinel without a password never gets `AUTH`.
/// Completes exactly once: with the reply (an `AUTH` the sentinel refused comes back as its
/// error reply), or with why there is none (refused, lost, or no answer within the timeout).
/// Loop thread only.
final class SentinelQuery {
    /// `AUTH`'s words for a sentinel that requires a password.
    struct Credentials {
        let user: String?
        let password: String
    }

    private var link: RedisLink?
    private var timer: LoopTimer!
    private var completion: ((Result<RedisReply, RedisError>) -> Void)?
    /// Why the link could not even be made: reported when the timer fires on the next turn.
    private var failedAtOnce: RedisError?
    private let question: [[UInt8]]
    private let credentials: Credentials?
    /// Where the answers stand: the first question, then (after `NOAUTH`) `AUTH`'s reply and
    /// the question asked again.
    private var phase = Phase.asking

    private enum Phase { case asking, authenticating, askingAgain }

    /// Asks the sentinel at `address` for `masterName`'s master, over TLS when `tls` is given,
    /// with `credentials` when it requires a password; `completion` runs on the loop.
    init(address: RedisHostPort, masterName: String, loop: EventLoop, timeout: Double, tls: RedisTLSContext.Link? = nil,
         credentials: Credentials? = nil, completion: @escaping (Result<RedisReply, RedisError>) -> Void) {
        self.completion = completion
        self.credentials = credentials
        question = ["SENTINEL", "get-master-addr-by-name", masterName].map { Array($0.utf8) }
        timer = LoopTimer(loop: loop) { [unowned self] in
            finish(.failure(failedAtOnce ?? RedisError(.timeout, "the sentinel at \(address) did not answer within \(timeout) s")))
        }
        do {
            let link = try RedisLink(endpoint: RedisEndpoint(host: address.host, port: address.port), loop: loop, tls: tls)
            self.link = link
            link.delegate = self
            link.send(question)
            timer.schedule(after: timeout)
        } catch {
            // Completes on the next turn, never inside the caller's call.
            failedAtOnce = error as? RedisError ?? RedisError(.connectFailed, "\(error)")
            timer.schedule(after: 0)
        }
    }

    /// Stops the query: the completion never runs.
    func cancel() {
        completion = nil
        timer.cancel()
        link?.delegate = nil
        link?.close()
        link = nil
    }

    private func finish(_ result: Result<RedisReply, RedisError>) {
        guard let completion else { return }
        cancel()
        completion(result)
    }
}

extension SentinelQuery: RedisLinkDelegate {
    func link(_ link: RedisLink, received reply: RedisReply) {
        switch phase {
        case .asking:
            if case .error(let line) = reply, line.hasPrefix("NOAUTH"), let credentials {
                phase = .authenticating
                let words = ["AUTH"] + (credentials.user.map { [$0] } ?? []) + [credentials.password]
                link.send(words.map { Array($0.utf8) })
                link.send(question)
                return
            }
            finish(.success(reply))
        case .authenticating:
            phase = .askingAgain
            if case .error(let line) = reply { finish(.success(.error("the sentinel refused AUTH: \(line)"))) }
        case .askingAgain:
            finish(.success(reply))
        }
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        finish(.failure(error))
    }
}
