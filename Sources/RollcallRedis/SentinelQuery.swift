import RollcallEventLoop

/// One question to one sentinel on a short-lived link of its own: connect (to a numeric
/// address), `SENTINEL get-master-addr-by-name <name>`, read the answer, close. Completes
/// exactly once: with the reply, or with why there is none (refused, lost, or no answer
/// within the timeout). Loop thread only.
final class SentinelQuery {
    private var link: RedisLink?
    private var timer: LoopTimer!
    private var completion: ((Result<RedisReply, RedisError>) -> Void)?
    /// Why the link could not even be made: reported when the timer fires on the next turn.
    private var failedAtOnce: RedisError?

    /// Asks the sentinel at `address` for `masterName`'s master, over TLS when `tls` is given;
    /// `completion` runs on the loop.
    init(address: RedisHostPort, masterName: String, loop: EventLoop, timeout: Double, tls: RedisTLSContext.Link? = nil,
         completion: @escaping (Result<RedisReply, RedisError>) -> Void) {
        self.completion = completion
        timer = LoopTimer(loop: loop) { [unowned self] in
            finish(.failure(failedAtOnce ?? RedisError(.timeout, "the sentinel at \(address) did not answer within \(timeout) s")))
        }
        do {
            let link = try RedisLink(endpoint: RedisEndpoint(host: address.host, port: address.port), loop: loop, tls: tls)
            self.link = link
            link.delegate = self
            link.send(["SENTINEL", "get-master-addr-by-name", masterName].map { Array($0.utf8) })
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
        finish(.success(reply))
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        finish(.failure(error))
    }
}
