import Foundation
import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// What a node checks in Redis before it serves (PROTOCOL §9), on a loop of its own:
/// - the key prefix is the cluster's, not foreign data: `P meta` says `format rollcall-3/g<n>`
///   (``KeyGroups/format``: nodes that spread keys over another number of groups refuse it),
///   or Redis holds no key under the prefix but the ones running nodes write after a data
///   loss (`P meta` with only `lastBeat`/`grace`, `P nodes`, `P node:<id>`; then this node
///   writes `P meta` and a new epoch);
/// - its `presence`, `state`, `userStatus` and `limits` sections equal those of every live node;
/// - then it registers itself (`P node:<id>`, `P nodes`).
public enum ClusterStartCheck {
    /// Claims the prefix, compares sections with live nodes, registers the node.
    /// The rest of the arguments: name/value pairs of sections. The session library (`orphan`, `markHeld`, `prefix`, `now`) comes first, so an earlier
    /// run's sessions are held exactly as when a node is declared dead.
    static let register = LuaScript("cluster.register", parameters: [
        .key("meta"), .text("prefix"), .text("format"), .text("epoch"), .text("node"), .number("timeoutMs"), .number("groups"),
        .number("afterLoss"),
    ], rest: "sectionsFrom", library: SessionScripts.library, body: """
        local found = redis.call('HGET', meta, 'format')
        -- Nodes of an earlier key layout kept the cluster's keys with no tag (`P meta`); on
        -- Redis Cluster that key may be another master's (an error here: there was none).
        local older = redis.pcall('HGET', prefix .. 'meta', 'format')
        if not found and type(older) == 'string' then
          return {'foreign', prefix .. 'meta (format ' .. older .. ', this node writes ' .. format .. ')'}
        end
        if not found then
          -- After Redis lost the cluster's data, nodes of the cluster may write before one of
          -- them registers again (a beat or a reaper tick of an older build: `meta`
          -- `lastBeat`/`grace`, `nodes`, `node:<id>`; scripts that were on their way when the
          -- data went, on a Redis Cluster where one master lost it: any key of the tagged
          -- layout, `P{<group>}…`): those keys are the cluster's own, and the registration's
          -- hand-over holds what sessions they left. Anything else is foreign.
          if redis.call('EXISTS', meta) == 1 then
            for _, field in ipairs(redis.call('HKEYS', meta)) do
              if field ~= 'lastBeat' and field ~= 'grace' then return {'foreign', meta} end
            end
          end
          local nodePrefix = control .. 'node:'
          local function ours(key)
            return key == meta or key == control .. 'nodes' or string.sub(key, 1, #nodePrefix) == nodePrefix
              or string.match(string.sub(key, #prefix + 1), '^{%d+}') ~= nil
          end
          local cursor = '0'
          repeat
            local scan = redis.call('SCAN', cursor, 'MATCH', prefix .. '*', 'COUNT', 1000)
            cursor = scan[1]
            for _, key in ipairs(scan[2]) do
              if not ours(key) then return {'foreign', key} end
            end
          until cursor == '0'
          redis.call('HSET', meta, 'format', format, 'epoch', epoch)
        elseif found ~= format then
          return {'foreign', meta .. ' (format ' .. found .. ', this node writes ' .. format .. ')'}
        end
        local live = redis.call('ZRANGEBYSCORE', control .. 'nodes', now - timeoutMs, '+inf')
        for _, other in ipairs(live) do
          if other ~= node then
            for i = sectionsFrom, #ARGV, 2 do
              local theirs = redis.call('HGET', control .. 'node:' .. other, 'section:' .. ARGV[i])
              if theirs and theirs ~= ARGV[i + 1] then return {'mismatch', ARGV[i], other} end
            end
          end
        end
        -- An earlier run with this id left sessions (killed, then restarted before the others
        -- declared it dead): held now with no node, never resurrected. Like a death, they stop
        -- counting as live message recipients and keep their messages until resumed. Here
        -- those of group 0 (the control slot's); the node hands over the other groups' after
        -- (`session.handOver`, one call per group).
        -- Registering again after a loss (`afterLoss` 1): their tokens go too (``orphan``).
        local orphaned = orphan(control, node, {}, nil, nil, afterLoss == 1)
        redis.call('DEL', control .. 'dead:' .. node)
        local key = control .. 'node:' .. node
        redis.call('DEL', key)
        redis.call('HSET', key, 'started', now, 'lastHeartbeat', now, 'incarnation', epoch)
        for i = sectionsFrom, #ARGV, 2 do redis.call('HSET', key, 'section:' .. ARGV[i], ARGV[i + 1]) end
        redis.call('ZADD', control .. 'nodes', now, node)
        -- Registering is the node's first beat: should Redis stop before any node beat, the
        -- silence is measured from here and opens a grace window like any other (a node
        -- registered but not yet beating would otherwise be declared dead when Redis is back).
        redis.call('HSET', meta, 'lastBeat', now)
        return {'ok', redis.call('HGET', meta, 'epoch'), orphaned}
        """)

    /// The register script's arguments for this node; `afterLoss`: registering again after
    /// Redis lost data or went back in time (``registerAgain``).
    static func arguments(configuration: Configuration, nodeId: String, afterLoss: Bool = false) -> [[UInt8]] {
        let sections = Configuration.sharedClusterSections.flatMap { name in
            [Array(name.utf8), Array((configuration.canonicalSection(name) ?? "").utf8)]
        }
        return register.arguments([
            "meta": ClusterKeys.controlTag(prefix: configuration.cluster.keyPrefix) + "meta",
            "prefix": configuration.cluster.keyPrefix, "format": KeyGroups(for: configuration).format, "epoch": UUID().uuidString.lowercased(), "node": nodeId,
            "timeoutMs": Int((configuration.cluster.nodeTimeoutSeconds * 1000).rounded()),
            "groups": KeyGroups(for: configuration).count, "afterLoss": afterLoss ? 1 : 0,
        ], rest: sections)
    }

    /// After Redis lost the data, or went back in time: registers the node again on a running
    /// link. The register script hands over group 0's sessions Redis still lists for this node
    /// (after a rollback: sessions it no longer has); with more than one key group the other
    /// groups' follow, sent at once behind it, so each reaches its master before any session
    /// the node starts from now on. Held, they time out; their resume tokens are forgotten
    /// (PROTOCOL §9: after a loss old tokens no longer resume, so no client resumes into what
    /// is left of a partly lost state).
    static func registerAgain(configuration: Configuration, nodeId: String, on route: StoreRoute,
                              then done: @escaping (Result<String, ClusterError>) -> Void) {
        let keys = ClusterKeys(configuration: configuration)
        route.run(register, arguments: arguments(configuration: configuration, nodeId: nodeId, afterLoss: true)) { result in
            if case .success(let reply) = result { _ = refenceOrphans(StoreReply(reply)[2], keys: keys, nodeId: nodeId, on: route) { _ in } }
            done(interpret(result, configuration: configuration))
        }
        for group in keys.groups.all where group != 0 {
            route.run(SessionScripts.handOver(keys: keys, group: group, node: nodeId, forgettingTokens: true), of: SessionScripts.handOver) { result in
                if case .success(let reply) = result { _ = refenceOrphans(StoreReply(reply)[1], keys: keys, nodeId: nodeId, on: route) { _ in } }
            }
        }
    }

    /// Sends `presence.refence` (held, no node) for each channel of each session in `orphaned`
    /// (``ReapScriptReply/orphanedSessions(_:)``'s list; empty with one key group, where the
    /// orphaning script refenced them itself); `answered` runs once per refence. Returns how
    /// many it sent.
    private static func refenceOrphans(_ orphaned: StoreReply, keys: ClusterKeys, nodeId: String, on route: StoreRoute,
                                       answered: @escaping (Result<RedisReply, RedisError>) -> Void) -> Int {
        var sent = 0
        for orphan in ReapScriptReply.orphanedSessions(orphaned) {
            for channel in orphan.channels {
                sent += 1
                route.run(PresenceScripts.refence(channelBase: keys.channel(channel).base, session: orphan.sessionId, owner: "", held: true,
                                                  from: nodeId),
                          of: PresenceScripts.refence, completion: answered)
            }
        }
        return sent
    }

    /// Runs the checks; throws ``ClusterError`` naming `cluster.keyPrefix`, the differing
    /// section, or an unreachable Redis. Returns the cluster's epoch.
    @discardableResult
    public static func run(configuration: Configuration, nodeId: String) throws(ClusterError) -> String {
        let target = try ClusterLink.target(of: configuration)
        guard let loop = EventLoop() else { throw ClusterError(.unreachable, "cluster mode needs libev (libev4), which could not be loaded") }
        defer { loop.destroy() }
        let timeout = configuration.cluster.nodeTimeoutSeconds
        let route = StoreRoute.to(target, loop: loop, timings: RedisTimings(timeoutSeconds: timeout), clientName: nil,
                                  tls: try ClusterLink.tlsContext(of: configuration), keyless: nil)
        defer { route.close() }
        route.start()
        var outcome: Result<RedisReply, RedisError>?
        let deadline = Date().addingTimeInterval(timeout)
        let tick = LoopTimer(loop: loop) {}
        defer { tick.cancel() }
        var sent = false
        while outcome == nil, Date() < deadline {
            if !sent, route.isReady {
                sent = true
                route.run(register, arguments: arguments(configuration: configuration, nodeId: nodeId)) { outcome = $0 }
            }
            tick.schedule(after: 0.01)
            loop.runOnce()
        }
        guard let outcome else {
            let why = switch route {
            case .connection(let connection): if case .disconnected(let error) = connection.state { " (\(error))" } else { "" }
            case .cluster(let client, _): client.lastRefreshError.map { " (\($0))" } ?? ""
            }
            throw ClusterError(.unreachable, "cluster.redis: no answer from \(target) within \(timeout) s (cluster.nodeTimeoutSeconds)\(why)")
        }
        let epoch = try interpret(outcome, configuration: configuration).get()
        let registered = (try? outcome.get()).map { StoreReply($0)[2] } ?? .null
        try handOverEarlierRun(configuration: configuration, nodeId: nodeId, registered: registered, on: route, loop: loop, tick: tick,
                               until: Date().addingTimeInterval(timeout))
        return epoch
    }

    /// With more than one key group, the sessions an earlier run with this id left in groups
    /// other than 0 (the register script orphaned group 0's, `registered`) become held with no
    /// node: one `session.handOver` per group, then `presence.refence` of each orphaned
    /// session's channels (their fence copies named this node, and counted it live for
    /// messages), all answered before the node serves.
    private static func handOverEarlierRun(configuration: Configuration, nodeId: String, registered: StoreReply, on route: StoreRoute,
                                           loop: EventLoop, tick: LoopTimer, until deadline: Date) throws(ClusterError) {
        let keys = ClusterKeys(configuration: configuration)
        var unanswered = keys.groups.count - 1, failure: RedisError?
        for group in keys.groups.all where group != 0 {
            route.run(SessionScripts.handOver(keys: keys, group: group, node: nodeId), of: SessionScripts.handOver) { result in
                unanswered -= 1
                switch result {
                case .failure(let error): failure = error
                case .success(let reply):
                    unanswered += refenceOrphans(StoreReply(reply)[1], keys: keys, nodeId: nodeId, on: route) { result in
                        unanswered -= 1
                        if case .failure(let error) = result { failure = error }
                    }
                }
            }
        }
        unanswered += refenceOrphans(registered, keys: keys, nodeId: nodeId, on: route) { result in
            unanswered -= 1
            if case .failure(let error) = result { failure = error }
        }
        while unanswered > 0, Date() < deadline {
            tick.schedule(after: 0.01)
            loop.runOnce()
        }
        if let failure { throw ClusterError(.unreachable, "cluster.redis: handing over an earlier run's sessions: \(failure)") }
        guard unanswered == 0 else {
            throw ClusterError(.unreachable, "cluster.redis: no answer to the hand-over of an earlier run's sessions within \(configuration.cluster.nodeTimeoutSeconds) s")
        }
    }

    /// The register script's answer: the epoch, or why the node must not serve.
    private static func interpret(_ outcome: Result<RedisReply, RedisError>, configuration: Configuration) -> Result<String, ClusterError> {
        Result { () throws(ClusterError) -> String in
        switch outcome {
        case .failure(let error):
            throw ClusterError(.unreachable, "cluster.redis: \(error)")
        case .success(let reply):
            let words = reply.elements?.map { $0.text ?? "" } ?? []
            switch words.first {
            case "ok":
                return words.count > 1 ? words[1] : ""
            case "foreign":
                throw ClusterError(.foreignData, "cluster.keyPrefix: Redis holds keys under \"\(configuration.cluster.keyPrefix)\" that no Rollcall node wrote (e.g. \(words.count > 1 ? words[1] : "?")); choose another prefix")
            case "mismatch":
                let section = words.count > 1 ? words[1] : "?"
                throw ClusterError(.configurationMismatch, "\(section): this section differs from the running node \(words.count > 2 ? words[2] : "?")'s; every node of a cluster needs the same \(Configuration.sharedClusterSections.joined(separator: ", ")) sections")
            default:
                throw ClusterError(.unreachable, "cluster.redis: unexpected answer to the start check")
            }
        }
        }
    }
}
