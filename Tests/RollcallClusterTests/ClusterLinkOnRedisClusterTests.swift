import Foundation
import Logging
@testable import RollcallRedisEngine
import RollcallCore
import RollcallEventLoop
import RollcallRedis
import RollcallTestSupport
import Testing

/// ``ClusterLink`` on a real Redis Cluster (3 masters, one replica each, started once for the
/// suite): the core's single-slot presence scripts routed by their declared key to the master
/// of each channel's slot, their events `SPUBLISH`ed in that slot and heard through
/// ``RedisShardedSubscriber``, a call with no key refused, and a master's `kill -9`
/// (docs/cluster.md, "The link on Redis Cluster").
@Suite("Cluster: the link on Redis Cluster", .serialized, LinkRedisCluster())
struct ClusterLinkOnRedisClusterTests {
    static let patience: TimeInterval = 15
    static let prefix = "lk:"

    /// What a link delivered, and its calls' outcomes by ticket.
    final class Recorder {
        var replies: [StoreTicket: Result<[StoreReply], StoreFailure>] = [:]
        var messages: [(channel: String, payload: String)] = []
        var resubscribed = 0
        private var next: UInt64 = 0

        func take(_ event: InboundEvent) {
            switch event {
            case .storeReplied(let ticket, let result): replies[ticket] = result
            case .storeMessage(let channel, let payload):
                messages.append((String(decoding: channel, as: UTF8.self), String(decoding: payload, as: UTF8.self)))
            case .storeResubscribed: resubscribed += 1
            default: break
            }
        }

        func ticket() -> StoreTicket {
            next += 1
            return StoreTicket(next)
        }
    }

    /// A link to the suite's cluster on `loop`, started and connected to every master.
    private func connectedLink(_ cluster: RedisClusterNodes, on loop: EventLoop, keyGroups: Int? = nil) throws -> (ClusterLink, Recorder) {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = keyGroups
        configuration.cluster.redis = cluster.url
        configuration.cluster.keyPrefix = Self.prefix
        configuration.cluster.heartbeatSeconds = 0.5
        configuration.cluster.nodeTimeoutSeconds = 2
        let link = try ClusterLink(configuration: configuration, nodeId: "lk1", epoch: nil, loop: loop,
                                   logger: Logger(label: "link-on-cluster"))
        let recorder = Recorder()
        link.deliver = recorder.take
        link.start()
        try #require(loop.run(until: { link.isConnected }, timeout: Self.patience), "never connected: \(link.healthProblem ?? "")")
        #expect(link.healthProblem == nil)
        return (link, recorder)
    }

    /// Runs `commands` as one store call through the link and waits for its outcome.
    private func call(_ link: ClusterLink, _ recorder: Recorder, _ commands: [StoreCommand], on loop: EventLoop) throws -> Result<[StoreReply], StoreFailure> {
        let ticket = recorder.ticket()
        link.perform(.store(ticket, commands, .request))
        try #require(loop.run(until: { recorder.replies[ticket] != nil }, timeout: Self.patience), "no answer to \(ticket)")
        return recorder.replies.removeValue(forKey: ticket)!
    }

    /// The channel arguments of `key` (the buckets of its group, as on Redis Cluster).
    private func arguments(_ keys: ClusterKeys, _ key: ChannelKey) -> PresenceScripts.Channel {
        let channel = keys.channel(key)
        return PresenceScripts.Channel(base: channel.base, id: channel.id, events: channel.events, dueFlushes: channel.dueFlushes,
                                       dueExpiries: channel.dueExpiries, webhookStream: channel.webhookStream,
                                       maxInstantEvents: 100, hysteresis: 0, intervalMs: 0, intervalHead: [], hooks: "", channelFields: [])
    }

    /// One message channel per master of the link's map (each the first of `room-<i>` there).
    private func channelPerMaster(_ link: ClusterLink, _ keys: ClusterKeys) throws -> [RedisHostPort: ChannelKey] {
        let map = try #require(link.clusterClient?.map)
        var found: [RedisHostPort: ChannelKey] = [:]
        for index in 0..<500 where found.count < map.masters.count {
            let key = ChannelKey(type: .message, name: Name(unchecked: "room-\(index)"))
            if let master = map.master(of: RedisClusterSlot.of(keys.channel(key).base)), found[master] == nil { found[master] = key }
        }
        try #require(found.count == 3, "a channel on each of 3 masters: \(found)")
        return found
    }

    /// `presence.publish` of `text` to `key` (empty: no member), and its event heard by the link.
    private func publish(_ text: String, to key: ChannelKey, _ keys: ClusterKeys, _ link: ClusterLink, _ recorder: Recorder,
                         on loop: EventLoop) throws {
        let command = PresenceScripts.publish(arguments(keys, key), session: "s1", token: "", requiredMember: nil, event: Array(text.utf8),
                                              prefix: Self.prefix, heldMessageBytes: 1000)
        let reply = try call(link, recorder, [command], on: loop).get()
        #expect(reply.first?.elements?.first?.text == "ok", "\(key): \(reply)")
        let events = keys.channel(key).events
        let heard = loop.run(until: { recorder.messages.contains { $0.channel == events && $0.payload.hasSuffix("\n" + text) } }, timeout: Self.patience)
        #expect(heard, "\(text) on \(events) never arrived: \(recorder.messages)")
    }

    @Test("presence scripts run on the master of each channel's slot (all three), their SPUBLISHed events reach the link's SSUBSCRIBE there; with 1024 key groups a call with no key is refused, never sent")
    func routesScriptsAndHearsShardChannels() throws {
        let cluster = try #require(LinkRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let (link, recorder) = try connectedLink(cluster, on: loop, keyGroups: KeyGroups.clusterCount)
            defer { link.close() }
            let keys = ClusterKeys(prefix: Self.prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
            let channels = try channelPerMaster(link, keys)
            for key in channels.values { link.perform(.listen(Array(keys.channel(key).events.utf8))) }
            try #require(loop.run(until: { link.isConnected }, timeout: Self.patience), "the events channels never subscribed")

            for (master, key) in channels.sorted(by: { $0.key.port < $1.key.port }) {
                let channel = arguments(keys, key)
                let replies = try call(link, recorder, [
                    PresenceScripts.flush(channel),
                    PresenceScripts.snapshot(channel, limit: 10, held: .none, viewers: []),
                    PresenceScripts.onlineUsers(channel, after: nil, pageSize: 10, includeState: true, includeUserId: true, viewer: nil),
                ], on: loop).get()
                #expect(replies.count == 3)
                for reply in replies {
                    if case .error(let line) = reply { Issue.record("\(key) on \(master): \(line)") }
                }
                try publish("hello \(master.port)", to: key, keys, link, recorder, on: loop)
            }
            #expect(recorder.resubscribed == 0, "first subscriptions are no loss")

            // Every master forgets its scripts while the links stay up: NOSCRIPT, then EVAL.
            for master in channels.keys { #expect(try cluster.command(port: master.port, ["SCRIPT", "FLUSH"]) == "OK") }
            for (master, key) in channels {
                let again = try call(link, recorder, [PresenceScripts.flush(arguments(keys, key))], on: loop).get()
                if case .error(let line)? = again.first { Issue.record("after SCRIPT FLUSH on \(master): \(line)") }
            }

            let keyless = try call(link, recorder, [.script(StoreScript(name: "test.keyless", source: "return 1"), arguments: [])], on: loop)
            #expect(keyless.failure?.code == .internal, "\(keyless)")
            let read = try call(link, recorder, [.command(["HGET", keys.channel(channels.values.first!).base, "seq"].map { Array($0.utf8) })], on: loop)
            #expect((try? read.get()) != nil, "a plain command with its key is routed: \(read)")
        }
    }

    @Test("with one key group, a script or command with no key goes to the master of the control tag's slot, where every key is")
    func keylessCallsGoToTheControlSlot() throws {
        let cluster = try #require(LinkRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            // One group set by hand: on a Redis Cluster the broker runs 1024 (KeyGroups.init(for:)).
            let (link, recorder) = try connectedLink(cluster, on: loop, keyGroups: 1)
            defer { link.close() }
            let control = ClusterKeys(prefix: Self.prefix).controlTag
            // A script that names its key itself: on another master Redis refuses it (a key
            // that is not local), so an answer of 1 says where it ran.
            let source = "redis.call('SET', '\(control)keyless', 'here') return 1"
            let ran = try call(link, recorder, [.script(StoreScript(name: "test.keyless", source: source), arguments: [])], on: loop)
            #expect((try? ran.get())?.first?.integer == 1, "\(ran)")
            let master = try #require(link.clusterClient?.map?.master(of: RedisClusterSlot.of(control + "keyless")))
            #expect(try cluster.command(port: master.port, ["GET", control + "keyless"]) == "here", "the key is on the control slot's master")
        }
    }

    @Test("a node's PUBLISH to an inbox (in its user's slot, on each of the three masters) or to its control channel goes as SPUBLISH to that slot's master and reaches the link's SSUBSCRIBE there")
    func routesInboxAndControlPublishes() throws {
        let cluster = try #require(LinkRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let (link, recorder) = try connectedLink(cluster, on: loop)
            defer { link.close() }
            let keys = ClusterKeys(prefix: Self.prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
            let map = try #require(link.clusterClient?.map)
            var inboxes: [RedisHostPort: String] = [:]
            for index in 0..<500 where inboxes.count < map.masters.count {
                let user = Name(unchecked: "user-\(index)")
                let inbox = keys.inbox(of: user)
                #expect(RedisClusterSlot.of(inbox) == RedisClusterSlot.of(keys.user(user).status), "\(inbox): in its user's slot")
                if let master = map.master(of: RedisClusterSlot.of(inbox)), inboxes[master] == nil { inboxes[master] = inbox }
            }
            try #require(inboxes.count == 3, "an inbox on each of 3 masters: \(inboxes)")
            for inbox in inboxes.values { link.perform(.listen(Array(inbox.utf8))) }
            try #require(loop.run(until: { link.isConnected }, timeout: Self.patience), "the inboxes never subscribed")

            // The link hears its own control channel from its start (ClusterLink.start()).
            let channels = inboxes.sorted { $0.key.port < $1.key.port }.map { $0.value } + [keys.controlChannel(of: "lk1")]
            for channel in channels {
                let text = "hello " + channel
                let replies = try call(link, recorder, [.command(["PUBLISH", channel, text].map { Array($0.utf8) })], on: loop).get()
                #expect(replies == [.integer(1)], "\(channel): SPUBLISH heard by the link's one SSUBSCRIBE there: \(replies)")
                let heard = loop.run(until: { recorder.messages.contains { $0.channel == channel && $0.payload == text } }, timeout: Self.patience)
                #expect(heard, "\(text) never arrived: \(recorder.messages)")
            }
        }
    }

    @Test("kill -9 of a master: its channel's calls answer UNAVAILABLE with retryAfterMs, then succeed on the promoted replica; its subscription comes back (resubscribed) and hears again")
    func followsAFailover() throws {
        let cluster = try #require(LinkRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let (link, recorder) = try connectedLink(cluster, on: loop)
            defer { link.close() }
            let keys = ClusterKeys(prefix: Self.prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
            let channels = try channelPerMaster(link, keys)
            for key in channels.values { link.perform(.listen(Array(keys.channel(key).events.utf8))) }
            try #require(loop.run(until: { link.isConnected }, timeout: Self.patience))
            let (victim, key) = try #require(channels.min { $0.key.port < $1.key.port })
            try publish("before", to: key, keys, link, recorder, on: loop)
            #expect(try cluster.command(port: victim.port, ["WAIT", "1", "2000"]) == "1")
            let killed = try #require(cluster.node(port: victim.port))
            killed.kill()

            var failures = 0
            var served = false
            let deadline = Date().addingTimeInterval(30)
            while !served, Date() < deadline {
                switch try call(link, recorder, [PresenceScripts.flush(arguments(keys, key))], on: loop) {
                case .success(let replies):
                    served = true
                    if case .error(let line)? = replies.first { Issue.record("after the failover: \(line)") }
                case .failure(let failure):
                    failures += 1
                    #expect(failure.code == .unavailable && (failure.retryAfterMs ?? 0) > 0, "\(failure)")
                    let until = Date().addingTimeInterval(Double(failure.retryAfterMs ?? 50) / 1000)
                    loop.run(until: { Date() >= until }, timeout: 2)
                }
            }
            #expect(served, "never served after the failover")
            #expect(failures > 0, "calls answered UNAVAILABLE while the master was down")
            let back = loop.run(until: { recorder.resubscribed > 0 && link.isConnected }, timeout: Self.patience)
            #expect(back, "resubscribed \(recorder.resubscribed), \(link.healthProblem ?? "healthy")")
            try publish("after", to: key, keys, link, recorder, on: loop)

            try killed.restart()
            try cluster.waitUntilHealthy(timeout: 30)
        }
    }
}

@Suite("Cluster: events channel names")
struct ClusterEventsChannelTests {
    @Test("a channel's events channel is in its group's slot and reads back to the channel; other names are not one")
    func eventsNameRoundTrip() {
        let keys = ClusterKeys(prefix: "p:", groups: KeyGroups(count: KeyGroups.clusterCount))
        for name in ["a", "room:1", "{x}", "é}e:"] {
            for type in [ChannelType.message, .stream] {
                let key = ChannelKey(type: type, name: Name(unchecked: name))
                let channel = keys.channel(key)
                #expect(channel.events.hasPrefix(channel.group + "e:"))
                #expect(RedisClusterSlot.of(channel.events) == RedisClusterSlot.of(channel.base))
                #expect(keys.channel(fromEvents: Array(channel.events.utf8)) == key)
            }
        }
        for other in ["p:e:m:1:a", "p:{}e:m:1:a", "p:{1}c:m:1:a", "q:{1}e:m:1:a", "p:{1}e:"] {
            #expect(keys.channel(fromEvents: Array(other.utf8)) == nil, "\(other)")
        }
        #expect(ClusterKeys(prefix: "p:").channel(ChannelKey(type: .message, name: Name(unchecked: "a"))).events == "p:{0}e:m:1:a")
    }
}

@Suite("Cluster: the key a plain store command is routed by")
struct StoreRouteKeyTests {
    @Test("the first argument of a one-key command; none for PUBLISH (routed by its channel instead), an unknown command, DEL or EXISTS of two keys, a bare word")
    func keyOfPlainCommands() {
        func key(_ words: String...) -> String? { StoreRoute.key(of: words.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) } }
        #expect(key("HGET", "P{3}c:m:1:a", "seq") == "P{3}c:m:1:a")
        #expect(key("zrange", "P uc:1:u", "0", "-1") == "P uc:1:u")
        #expect(key("DEL", "k") == "k")
        #expect(key("DEL", "k", "l") == nil)
        #expect(key("EXISTS", "k", "l") == nil)
        #expect(key("PUBLISH", "P n:x", "held s") == nil)
        #expect(key("FLUSHALL", "ASYNC") == nil)
        #expect(key("HGET") == nil)
    }

    @Test("a PUBLISH of one payload is routed by its channel (as SPUBLISH on Redis Cluster); other commands and other shapes are not")
    func channelOfPublishes() {
        func channel(_ words: String...) -> String? {
            StoreRoute.publishedChannel(of: words.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(channel("PUBLISH", "P{3}uu:1:u", "E\nx") == "P{3}uu:1:u")
        #expect(channel("publish", "P{n:a}n", "held s") == "P{n:a}n")
        #expect(channel("PUBLISH", "P{n:a}n") == nil)
        #expect(channel("SPUBLISH", "P{n:a}n", "held s") == nil)
        #expect(channel("HGET", "k", "f") == nil)
    }
}

/// Starts one ``RedisClusterNodes`` (3 masters, one replica each) for the suite it marks and
/// kills its nodes after the suite's last test; the tests read it from ``current``.
struct LinkRedisCluster: SuiteTrait, TestScoping {
    @TaskLocal static var current: RedisClusterNodes?

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let cluster = try RedisClusterNodes(replicasPerMaster: 1)
        defer { for node in cluster.nodes { node.kill() } }
        try await Self.$current.withValue(cluster) { try await function() }
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
