import RollcallEventLoop

/// The current pub/sub link of a ``RedisSubscriber`` or a ``RedisShardLink``, and its liveness
/// check: ``begin(on:)`` takes a new link, ``stop()`` closes it. Loop thread only.
///
/// A `PING` on a subscribed link would only show that the socket answers, not that the
/// subscriptions are still there. So each link subscribes a channel of its own
/// (``channel``: the prefix + a random id, new for every link) and, every
/// ``RedisTimings/probeIntervalSeconds``, a token is `PUBLISH`ed to it through a command
/// connection. The link is declared down (``onFailure``) when:
///
/// - it is not subscribed (``established()``) within ``RedisTimings/timeoutSeconds`` of
///   ``begin()`` (``RedisError/Code/timeout``);
/// - `PUBLISH` answers 0 receivers (``RedisError/Code/subscriptionLost``);
/// - the token does not come back (``take(_:on:_:)``) within ``RedisTimings/timeoutSeconds``
///   (``RedisError/Code/timeout``).
///
/// A round whose command connection is missing or down is skipped: that connection reports
/// the outage itself.
final class SubscriberProbe {
    /// The link being subscribed or up; nil before ``begin(on:)`` and after ``stop()``.
    private(set) var link: RedisLink?
    /// The link's probe channel (empty before the first ``begin(on:)``).
    private(set) var channel: [UInt8] = []
    /// Called once the link failed the check; it is closed by then (the owner reconnects).
    var onFailure: (RedisError) -> Void = { _ in }

    private let timings: RedisTimings
    private let prefix: [UInt8]
    /// Where the link goes, for messages (`host:port` or the target).
    private let place: String
    /// The command connection to publish through now; nil skips the round.
    private let publisher: () -> RedisConnection?
    private var timer: LoopTimer!
    /// True from ``begin(on:)`` until ``established()``: the timer is the subscription's deadline.
    private var subscribing = false
    private var outstanding: [UInt8]?
    private var count = 0
    /// Bumped by ``begin(on:)`` and ``stop()``: the answer to a `PUBLISH` of an earlier link is ignored.
    private var generation: UInt64 = 0

    /// A probe on `loop` naming its channels `channelPrefix` + a random id, publishing through
    /// what `publisher` returns; `place` names the link's server in messages.
    init(loop: EventLoop, timings: RedisTimings, channelPrefix: [UInt8], place: String,
         publisher: @escaping () -> RedisConnection?) {
        self.timings = timings
        prefix = channelPrefix
        self.place = place
        self.publisher = publisher
        timer = LoopTimer(loop: loop) { [unowned self] in fired() }
    }

    /// `link` is the new link (any earlier one is closed), being subscribed: a fresh
    /// ``channel`` (subscribe it last), and the deadline for ``established()``.
    func begin(on link: RedisLink) {
        stop()
        self.link = link
        channel = prefix + Array(Self.randomID().utf8)
        subscribing = true
        timer.schedule(after: timings.timeoutSeconds)
    }

    /// The link's probe channel is subscribed: probing starts.
    func established() {
        subscribing = false
        timer.schedule(after: timings.probeIntervalSeconds)
    }

    /// What a push on ``channel`` was.
    enum Push: Equatable {
        /// A `message` (the outstanding token, if it was that, is answered).
        case message
        /// The `subscribe` confirmation: every subscription sent before it is in (Redis
        /// confirms in order), so the link is up once this comes.
        case subscribed
    }

    /// Takes a pub/sub push of the link (`kind`, e.g. `message`, on `channel`, with all its
    /// `elements`) when it is about ``channel``; nil when it is not the probe's.
    func take(_ kind: String, on channel: [UInt8], _ elements: [RedisReply]) -> Push? {
        guard channel == self.channel else { return nil }
        switch kind {
        case "message":
            if elements.count >= 3, case .bulk(let payload) = elements[2], let outstanding, payload == outstanding {
                self.outstanding = nil
                timer.schedule(after: timings.probeIntervalSeconds)
            }
            return .message
        case "subscribe":
            return .subscribed
        default:
            return nil
        }
    }

    /// Closes the link, if any (no delegate call follows): no more rounds until the next
    /// ``begin(on:)``.
    func stop() {
        link?.close()
        link = nil
        generation += 1
        subscribing = false
        outstanding = nil
        timer.cancel()
    }

    private func fired() {
        if subscribing {
            fail(RedisError(.timeout, "subscribing at \(place) took longer than \(timings.timeoutSeconds) s"))
            return
        }
        if outstanding != nil {
            fail(RedisError(.timeout, "the probe message did not arrive within \(timings.timeoutSeconds) s"))
            return
        }
        guard let connection = publisher(), connection.state.isConnected else {
            timer.schedule(after: timings.probeIntervalSeconds)
            return
        }
        count += 1
        let token = Array(String(count).utf8)
        outstanding = token
        timer.schedule(after: timings.timeoutSeconds)
        let sent = generation
        connection.send([Array("PUBLISH".utf8), channel, token]) { [weak self] result in
            guard let self, sent == generation, outstanding == token else { return }
            switch result {
            case .success(.integer(0)):
                fail(RedisError(.subscriptionLost, "no subscriber on this link's probe channel at \(place)"))
            case .success:
                break
            case .failure:
                // The command connection is down (its own watchdog reports that): skip this round.
                outstanding = nil
                timer.schedule(after: timings.probeIntervalSeconds)
            }
        }
    }

    private func fail(_ error: RedisError) {
        stop()
        onFailure(error)
    }

    deinit {
        link?.close()
    }

    private static func randomID() -> String {
        (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16) }.joined()
    }
}
