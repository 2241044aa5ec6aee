import Foundation
import RollcallEventLoop
@testable import RollcallRedis
import RollcallTestSupport
import Testing

/// A subscriber with recorders for its messages, states and resubscriptions.
final class SubscriberProbe {
    let subscriber: RedisSubscriber
    var messages: [(channel: [UInt8], payload: [UInt8])] = []
    var states: [RedisConnectionState] = []
    var resubscriptions = 0

    /// A subscriber to the Redis `publisher` goes to.
    init(on loop: EventLoop, publisher: RedisConnection, timings: RedisTimings) {
        subscriber = RedisSubscriber(loop: loop, publisher: publisher, probeChannelPrefix: "test:probe:", timings: timings)
        subscriber.onMessage = { [unowned self] in messages.append(($0, $1)) }
        subscriber.onStateChange = { [unowned self] in states.append($0) }
        subscriber.onResubscribed = { [unowned self] in resubscriptions += 1 }
    }

    func payloads(on channel: String) -> [String] {
        messages.filter { $0.channel == Array(channel.utf8) }.map { String(decoding: $0.payload, as: UTF8.self) }
    }
}

/// Publishes until the subscriber has the message (a fresh link may not be subscribed yet
/// at the first try); true once received.
func publishUntilReceived(_ payload: String, on channel: String, via connection: RedisConnection,
                          to probe: SubscriberProbe, loop: EventLoop) -> Bool {
    loop.run(until: {
        if probe.payloads(on: channel).contains(payload) { return true }
        connection.send(["PUBLISH", channel, payload]) { _ in }
        return loop.run(until: { probe.payloads(on: channel).contains(payload) }, timeout: 0.2)
    }, timeout: patience)
}

@Suite struct RedisSubscriberTests {
    static let timings = RedisTimings(timeoutSeconds: 1, probeIntervalSeconds: 0.2)

    @Test func deliversMessagesOfSubscribedChannelsOnly() throws {
        let redis = try RedisServer(password: "pw")
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: Self.timings)
            let binary: [UInt8] = [0x00, 0xff, 0x0a]
            probe.subscriber.subscribe("news")
            probe.subscriber.subscribe(binary)
            probe.subscriber.start()
            #expect(loop.run(until: { probe.resubscriptions == 1 }, timeout: patience))
            #expect(probe.states == [.connected])

            #expect(try reply(connection, ["PUBLISH", "news", "hello"], on: loop) == .integer(1))
            #expect(try reply(connection, ["PUBLISH", "other", "ignored"], on: loop) == .integer(0))
            var got: [Result<RedisReply, RedisError>] = []
            connection.send([Array("PUBLISH"), binary, binary + binary]) { got.append($0) }
            #expect(loop.run(until: { probe.messages.count == 2 }, timeout: patience))
            #expect(probe.payloads(on: "news") == ["hello"])
            #expect(probe.messages.last.map { $0.channel == binary && $0.payload == binary + binary } == true)

            // Subscribing later works on the live link; unsubscribing stops delivery.
            probe.subscriber.subscribe("late")
            #expect(publishUntilReceived("1", on: "late", via: connection, to: probe, loop: loop))
            probe.subscriber.unsubscribe("news")
            #expect(loop.run(until: {
                (try? reply(connection, ["PUBSUB", "NUMSUB", "news"], on: loop)) == .array([.bulk(Array("news")), .integer(0)])
            }, timeout: patience))
            #expect(probe.subscriber.channels == [Array("late"), binary])
            probe.subscriber.close()
            connection.close()
        }
    }

    @Test func resubscribesAfterItsConnectionIsKilled() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: Self.timings)
            probe.subscriber.subscribe("room")
            probe.subscriber.start()
            #expect(loop.run(until: { probe.resubscriptions == 1 }, timeout: patience))

            #expect(try reply(connection, ["CLIENT", "KILL", "TYPE", "pubsub"], on: loop) == .integer(1))
            #expect(loop.run(until: { probe.resubscriptions == 2 }, timeout: patience))
            #expect(probe.states.count == 3 && probe.states.first == .connected && probe.states.last == .connected)
            #expect(publishUntilReceived("after", on: "room", via: connection, to: probe, loop: loop))
            probe.subscriber.close()
            connection.close()
        }
    }

    @Test func theProbeNoticesSubscriptionsLostOnALiveConnection() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: Self.timings)
            probe.subscriber.subscribe("room")
            probe.subscriber.start()
            #expect(loop.run(until: { probe.resubscriptions == 1 }, timeout: patience))

            probe.subscriber.dropSubscriptionsSilently()
            #expect(loop.run(until: { probe.resubscriptions == 2 }, timeout: patience))
            guard probe.states.count >= 2, case .disconnected(let reason) = probe.states[1] else {
                Issue.record("expected a reported loss, got \(probe.states)")
                return
            }
            #expect(reason.code == .subscriptionLost)
            #expect(publishUntilReceived("again", on: "room", via: connection, to: probe, loop: loop))
            probe.subscriber.close()
            connection.close()
        }
    }
}
