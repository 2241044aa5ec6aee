import RollcallEventLoop

/// Follows a Sentinel failover at once, even on an idle node: a pub/sub link to one sentinel
/// subscribed to `+switch-master`, which the sentinels publish when they promote a replica
/// (`<name> <old-ip> <old-port> <new-ip> <new-port>`). For this master's name it calls
/// ``onSwitch`` with the new address; the links then leave the old master and ask the sentinels
/// again. A best effort on top of what already follows a failover (a lost link, `ROLE`,
/// `READONLY`): a sentinel that is down or loses the link is replaced by the next one after a
/// backoff. Loop thread only; owned by ``RedisLocator``.
final class SentinelWatch {
    /// The master moved to this address (as the sentinel announced it).
    var onSwitch: (RedisHostPort) -> Void = { _ in }

    private let set: RedisSentinelSet
    private let loop: EventLoop
    private let tls: RedisTLSContext?
    private let resolve: (RedisHostPort, @escaping (Result<RedisHostPort, RedisError>) -> Void) -> Void
    private var link: RedisLink?
    private var next = 0
    private var backoff: Backoff
    private var timer: LoopTimer!
    private var authenticating = false
    private var isClosed = false
    private static let channel = Array("+switch-master".utf8)

    /// A watch over `set`'s sentinels; `resolve` finds a sentinel's numeric address off the loop.
    init(set: RedisSentinelSet, loop: EventLoop, tls: RedisTLSContext?, timings: RedisTimings,
         resolve: @escaping (RedisHostPort, @escaping (Result<RedisHostPort, RedisError>) -> Void) -> Void) {
        self.set = set
        self.loop = loop
        self.tls = tls
        self.resolve = resolve
        backoff = Backoff(initial: timings.initialBackoffSeconds, maximum: timings.maxBackoffSeconds)
        timer = LoopTimer(loop: loop) { [unowned self] in connect() }
    }

    /// Subscribes on the first sentinel that answers.
    func start() { connect() }

    /// Closes the link; nothing more is called.
    func close() {
        isClosed = true
        timer.cancel()
        dropLink()
    }

    private func connect() {
        guard !isClosed, link == nil else { return }
        let index = next
        next = (next + 1) % set.sentinels.count
        let sentinel = set.sentinels[index]
        resolve(sentinel) { [weak self] result in
            guard let self, !isClosed, link == nil else { return }
            guard case .success(let address) = result else { return retry() }
            do {
                let link = try RedisLink(endpoint: RedisEndpoint(host: address.host, port: address.port), loop: loop,
                                         tls: set.tls ? tls?.link(to: sentinel.host) : nil)
                link.delegate = self
                self.link = link
                authenticating = false
                link.send([Array("SUBSCRIBE".utf8), Self.channel])
            } catch {
                retry()
            }
        }
    }

    private func retry() {
        dropLink()
        guard !isClosed else { return }
        timer.schedule(after: backoff.take())
    }

    private func dropLink() {
        link?.delegate = nil
        link?.close()
        link = nil
    }
}

extension SentinelWatch: RedisLinkDelegate {
    func link(_ link: RedisLink, received reply: RedisReply) {
        guard link === self.link else { return }
        if case .error(let line) = reply {
            // A sentinel with `requirepass`: once more after AUTH with the URL's credentials.
            guard line.hasPrefix("NOAUTH"), !authenticating, let password = set.password else { return retry() }
            authenticating = true
            link.send((["AUTH"] + (set.user.map { [$0] } ?? []) + [password]).map { Array($0.utf8) })
            link.send([Array("SUBSCRIBE".utf8), Self.channel])
            return
        }
        guard let elements = reply.elements, elements.count == 3, case .bulk(let kind) = elements[0] else { return }
        switch String(decoding: kind, as: UTF8.self) {
        case "subscribe":
            backoff.reset()
        case "message":
            guard let text = elements[2].text else { return }
            let words = text.split(separator: " ")
            guard words.count == 5, words[0] == set.masterName, let port = Int(words[4]) else { return }
            onSwitch(RedisHostPort(host: String(words[3]), port: port))
        default:
            break
        }
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        guard link === self.link else { return }
        retry()
    }
}
