import Foundation
import Logging
@testable import RollcallRedisEngine
import RollcallCore
import RollcallEventLoop
import RollcallProtocol
import RollcallRedis
import RollcallTestSupport

/// Several brokers in this process, each a node of one cluster on a throwaway
/// `redis-server`: the core (`Broker`) and the transport's Redis half (`ClusterLink`) exactly
/// as the `rollcall` binary runs them, on one libev loop, with connections simulated by the
/// bed instead of libwebsockets. Clients are connection ids on a node with an inbox.
final class ClusterBed {
    /// One simulated client connection.
    final class Client {
        let node: Int
        let connection: ConnectionID
        /// Replies by request id.
        var replies: [Int: JSON] = [:]
        /// Events in arrival order.
        var events: [JSON] = []
        /// The close code, once the node closed the connection.
        var closedWith: CloseCode?
        var nextId = 0
        /// From the login reply.
        var resumeToken = ""
        var sessionId = ""
        var resumed = false

        init(node: Int, connection: ConnectionID) {
            self.node = node
            self.connection = connection
        }
    }

    let redis: RedisServer
    let loop: EventLoop
    var brokers: [Broker] = []
    var links: [ClusterLink] = []
    var clients: [ConnectionID: Client] = [:]
    /// Faults: a store call this returns true for (node index, commands) fails as a whole, as
    /// if the node's link to Redis dropped before it ran (the call never reaches Redis).
    var dropsStoreCall: ((Int, [StoreCommand]) -> Bool)?
    /// Faults: a store call this returns true for runs in Redis, but its answer is lost (the
    /// node gets a failure, as when the link drops after Redis ran it).
    var losesStoreReply: ((Int, [StoreCommand]) -> Bool)?
    /// Per node: tickets are numbered by each broker, so two nodes use the same numbers.
    private var lostReplies: [Int: Set<StoreTicket>] = [:]
    /// Faults: a pub/sub message this returns true for (node index, payload) waits until
    /// ``releaseHeldMessages(node:)``, as when a node's subscriber link lags its command link.
    var delaysStoreMessage: ((Int, [UInt8]) -> Bool)?
    private var delayedMessages: [Int: [InboundEvent]] = [:]
    /// Faults: the answer to a store call this returns true for (node index, commands) waits
    /// until ``releaseHeldReplies(node:)``, as when Redis is slow to answer one command.
    var delaysStoreReply: ((Int, [StoreCommand]) -> Bool)?
    /// Faults: Redis' confirmations of a node's subscriptions (`storeListening`) wait while
    /// this returns true for the node index, until ``releaseHeldListening(node:)`` (or are
    /// dropped with `dropsListening`), as when the subscriber link lags the command link.
    var delaysListening: ((Int) -> Bool)?
    /// Drop the confirmations ``delaysListening`` holds instead of keeping them.
    var dropsListening = false
    private var delayedListening: [Int: [InboundEvent]] = [:]
    private var delayedTickets: [Int: Set<StoreTicket>] = [:]
    private var delayedReplies: [Int: [InboundEvent]] = [:]
    /// Called with each store call a node makes, before its link sends it (the loop is not
    /// running then: a blocking command to Redis from here runs before the call does).
    var beforeStoreCall: ((Int, [StoreCommand]) -> Void)?
    /// Called with the lane of each store call a node makes (``StoreCallPriority``).
    var storeCallPriority: ((Int, [StoreCommand], StoreCallPriority) -> Void)?
    /// Called with each store call a node made and what came back for it (node index,
    /// commands, result), before the node handles the answer.
    var afterStoreReply: ((Int, [StoreCommand], Result<[StoreReply], StoreFailure>) -> Void)?
    private var watchedCalls: [Int: [StoreTicket: [StoreCommand]]] = [:]
    /// Answers to ``run(_:on:)``, by ticket (numbered down from the top: no broker's).
    private var directAnswers: [StoreTicket: Result<[StoreReply], StoreFailure>] = [:]
    private var nextDirectTicket = UInt64.max
    private var nextConnection: UInt64 = 0
    private var feeding: [Bool] = []
    private var queued: [[InboundEvent]] = []

    /// `nodes` nodes with `configuration` (its `cluster` section is filled in here).
    /// Server API answers by request id: status and body.
    var apiResponses: [APIRequestID: (status: Int, body: JSON)] = [:]
    private var nextAPIRequest: UInt64 = 0
    /// Nodes stopped by ``stop(node:)``: no ticks, no link, as after kill -9.
    private var stopped: Set<Int> = []

    /// With `slotAudit`: the scripts of `among` that touched keys of two Redis Cluster slots.
    func crossSlotScripts(among scripts: [LuaScript]) throws -> Set<String> {
        Set(try scripts.map(\.store.name).filter { try redis.command(["EXISTS", SlotAudit.markKey(scriptName: $0)]) == ":1" })
    }

    /// With `slotAudit`, the nodes run their scripts under ``SlotAudit`` (``ClusterLink/auditsSlots``):
    /// a script that touches keys of two Redis Cluster slots is marked in Redis
    /// (``crossSlotScripts(among:)``), and runs as ever.
    init(nodes: Int, configuration base: Configuration, prefix: String = "bed:", heartbeatSeconds: Double = 0.1,
         slotAudit: Bool = false) throws {
        redis = try RedisServer()
        guard let loop = EventLoop() else { throw TestSupportError("libev could not be loaded") }
        self.loop = loop
        var configuration = base
        configuration.cluster.redis = redis.url()
        configuration.cluster.keyPrefix = prefix
        configuration.cluster.heartbeatSeconds = heartbeatSeconds
        configuration.cluster.nodeTimeoutSeconds = max(1, 2 * heartbeatSeconds)
        configuration.storage.path = nil
        var logger = Logger(label: "bed")
        logger.logLevel = .critical
        for index in 0..<nodes {
            let nodeId = "n\(index + 1)"
            let epoch = try ClusterStartCheck.run(configuration: configuration, nodeId: nodeId)
            let broker = Broker(configuration: configuration, nodeId: nodeId, engines: BrokerEngines.onRedis)
            let link = try ClusterLink(configuration: configuration, nodeId: nodeId, epoch: epoch, loop: loop, logger: logger)
            link.deliver = { [unowned self] event in feed(index, event) }
            link.auditsSlots = slotAudit
            brokers.append(broker)
            links.append(link)
            feeding.append(false)
            queued.append([])
            link.start()
        }
        try pump(until: { links.allSatisfy(\.isConnected) }, what: "every node connected to Redis")
    }

    deinit {
        for link in links {
            link.deliver = nil
            link.close()
        }
        loop.runOnce()
        loop.destroy()
        redis.kill()
    }

    // MARK: - Driving

    /// Hands `event` to node `index` and carries out its actions (never re-entering a broker).
    func feed(_ index: Int, _ event: InboundEvent) {
        guard !stopped.contains(index) else { return }
        if case .storeMessage(_, let payload) = event, delaysStoreMessage?(index, payload) == true {
            delayedMessages[index, default: []].append(event)
            return
        }
        if case .storeListening = event, delaysListening?(index) == true {
            if !dropsListening { delayedListening[index, default: []].append(event) }
            heldListenings[index, default: 0] += 1
            return
        }
        if case .storeReplied(let ticket, _) = event, delayedTickets[index]?.remove(ticket) != nil {
            delayedReplies[index, default: []].append(event)
            return
        }
        if case .storeReplied(let ticket, let result) = event, ticket.rawValue > nextDirectTicket {
            directAnswers[ticket] = result
            return
        }
        if case .storeReplied(let ticket, let result) = event, let commands = watchedCalls[index]?.removeValue(forKey: ticket) {
            afterStoreReply?(index, commands, result)
        }
        if case .storeReplied(let ticket, _) = event, lostReplies[index]?.remove(ticket) != nil {
            queued[index].append(.storeReplied(ticket, .failure(StoreFailure(.unavailable, "answer lost by the test", retryAfterMs: 100))))
        } else {
            queued[index].append(event)
        }
        guard !feeding[index] else { return }
        feeding[index] = true
        while !queued[index].isEmpty {
            let next = queued[index].removeFirst()
            for action in brokers[index].handle(next) { perform(action, on: index) }
        }
        feeding[index] = false
    }

    private func perform(_ action: Action, on index: Int) {
        switch action {
        case .send(let connection, let bytes, _):
            guard let client = clients[connection] else { return }
            guard let value = try? JSONParser.parse(bytes) else { return }
            if let id = value["id"]?.numberValue?.intValue, value["ok"] != nil {
                client.replies[id] = value
            } else {
                client.events.append(value)
            }
        case .close(let connection, let code, _):
            clients[connection]?.closedWith = code
            feed(index, .ended(connection, .closeFrame))
        case .store(let ticket, let commands, _) where dropsStoreCall?(index, commands) == true:
            feed(index, .storeReplied(ticket, .failure(StoreFailure(.unavailable, "link dropped by the test", retryAfterMs: 100))))
        case .store(let ticket, let commands, let priority):
            beforeStoreCall?(index, commands)
            storeCallPriority?(index, commands, priority)
            if afterStoreReply != nil { watchedCalls[index, default: [:]][ticket] = commands }
            if losesStoreReply?(index, commands) == true { lostReplies[index, default: []].insert(ticket) }
            if delaysStoreReply?(index, commands) == true { delayedTickets[index, default: []].insert(ticket) }
            links[index].perform(action)
        case .listen, .unlisten:
            links[index].perform(action)
        case .respond(let id, let status, let body):
            apiResponses[id] = (status, (try? JSONParser.parse(body)) ?? .null)
        case .notifyBackend:
            break
        }
    }

    /// Faults: the first store call of node `node` that runs the script named `script` fails
    /// as a whole — dropped before it reaches Redis, or, with `answerLost`, run in Redis with
    /// its answer lost. Later calls go through.
    func failFirstCall(running script: String, on node: Int, answerLost: Bool) {
        var failed = false
        let fault: (Int, [StoreCommand]) -> Bool = { index, commands in
            guard !failed, index == node,
                  commands.contains(where: { if case .script(let called, _) = $0 { called.name == script } else { false } })
            else { return false }
            failed = true
            return true
        }
        if answerLost { losesStoreReply = fault } else { dropsStoreCall = fault }
    }

    /// Runs `commands` on node `node`'s link to Redis (as a node's engine would, behind its
    /// broker's back) and waits for Redis' answer.
    func run(_ commands: [StoreCommand], on node: Int) throws -> [StoreReply] {
        let ticket = StoreTicket(nextDirectTicket)
        nextDirectTicket -= 1
        links[node].perform(.store(ticket, commands, .request))
        try pump(until: { directAnswers[ticket] != nil }, what: "Redis' answer to \(commands.count) commands")
        switch directAnswers.removeValue(forKey: ticket)! {
        case .success(let replies): return replies
        case .failure(let failure): throw TestSupportError("store call failed: \(failure)")
        }
    }

    /// Hands node `node` the pub/sub messages ``delaysStoreMessage`` held back, in order.
    func releaseHeldMessages(node: Int) {
        feed(node, delayedMessages.removeValue(forKey: node) ?? [], holdingOff: \.delaysStoreMessage)
    }

    /// Feeds `events` to node `node` in order, with the fault `hook` off meanwhile (so that
    /// what it held back is not held again).
    private func feed<Hook>(_ node: Int, _ events: [InboundEvent], holdingOff hook: ReferenceWritableKeyPath<ClusterBed, Hook?>) {
        let held = self[keyPath: hook]
        self[keyPath: hook] = nil
        for event in events { feed(node, event) }
        self[keyPath: hook] = held
    }

    /// How many subscription confirmations ``delaysListening`` held back (or dropped) for `node`.
    private(set) var heldListenings: [Int: Int] = [:]

    /// Hands node `node` the subscription confirmations ``delaysListening`` held back, in order.
    func releaseHeldListening(node: Int) {
        feed(node, delayedListening.removeValue(forKey: node) ?? [], holdingOff: \.delaysListening)
    }

    /// Hands node `node` the store answers ``delaysStoreReply`` held back, in order.
    func releaseHeldReplies(node: Int) {
        for event in delayedReplies.removeValue(forKey: node) ?? [] { feed(node, event) }
    }

    /// Turns the loop (and every node's timers) until `condition` holds; throws after `timeout`.
    func pump(until condition: () -> Bool, timeout: TimeInterval = 10, what: @autoclosure () -> String) throws {
        let deadline = Date().addingTimeInterval(timeout)
        let tick = LoopTimer(loop: loop) {}
        defer { tick.cancel() }
        while !condition() {
            guard Date() < deadline else { throw TestSupportError("timed out waiting for \(what())") }
            for index in brokers.indices where !stopped.contains(index) {
                if let due = brokers[index].nextDeadline, due <= brokers[index].monotonicNow { feed(index, .tick) }
            }
            tick.schedule(after: 0.005)
            loop.runOnce()
        }
    }

    /// A server API request to node `node`, answered when its response comes.
    func api(_ op: String, _ body: [String: JSON], on node: Int) throws -> (status: Int, body: JSON) {
        nextAPIRequest += 1
        let id = APIRequestID(nextAPIRequest)
        feed(node, .api(id, op: op, body: JSON.object(JSONObject(body.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })).encoded()))
        try pump(until: { apiResponses[id] != nil }, what: "the answer to \(op)")
        return apiResponses[id]!
    }

    /// Stops node `index` as kill -9 would: its link closes (no heartbeat, no reply), its
    /// broker gets no more events.
    func stop(node index: Int) {
        stopped.insert(index)
        links[index].deliver = nil
        links[index].close()
    }

    // MARK: - Clients

    /// Opens a connection on node `node`, not logged in.
    func open(on node: Int) -> Client {
        nextConnection += 1
        let client = Client(node: node, connection: ConnectionID(nextConnection))
        clients[client.connection] = client
        feed(node, .opened(client.connection))
        return client
    }

    /// Opens a connection on node `node` and logs in.
    @discardableResult
    func login(_ userId: String, on node: Int, _ extra: [String: JSON] = [:]) throws -> Client {
        let client = open(on: node)
        var arguments: [String: JSON] = ["userId": .string(userId)]
        for (key, value) in extra { arguments[key] = value }
        let reply = try request(client, "login", arguments)
        guard reply["ok"]?.boolValue == true else { throw TestSupportError("login failed: \(reply.compactString)") }
        client.resumeToken = reply["result"]?.string("resumeToken") ?? ""
        client.sessionId = reply["result"]?.string("sessionId") ?? ""
        client.resumed = reply["result"]?["resumed"]?.boolValue ?? false
        return client
    }

    /// Sends one request and waits for its reply.
    @discardableResult
    func request(_ client: Client, _ op: String, _ arguments: [String: JSON] = [:]) throws -> JSON {
        let id = send(client, op, arguments)
        try pump(until: { client.replies[id] != nil || client.closedWith != nil }, what: "the reply to \(op)")
        return client.replies[id] ?? .null
    }

    /// Sends one request without waiting; returns its id (its reply lands in `client.replies`).
    func send(_ client: Client, _ op: String, _ arguments: [String: JSON] = [:]) -> Int {
        client.nextId += 1
        let id = client.nextId
        var members: [(key: String, value: JSON)] = [("id", .int(id)), ("op", .string(op))]
        for key in arguments.keys.sorted() { members.append((key, arguments[key]!)) }
        feed(client.node, .received(client.connection, JSON.object(JSONObject(members)).encoded()))
        return id
    }

    /// Ends a client's connection: with a close frame, or dropped (the session is held).
    func disconnect(_ client: Client, abnormally: Bool) {
        clients[client.connection] = nil
        feed(client.node, .ended(client.connection, abnormally ? .abnormal(.dropped) : .closeFrame))
    }

    /// `user` logged in on `node`, a member of `channel` (its join answered ok).
    func member(_ user: String, on node: Int, of channel: String = "room") throws -> Client {
        let client = try login(user, on: node)
        let joined = try request(client, "join", ["channel": .string(channel)])
        guard joined["ok"]?.boolValue == true else { throw TestSupportError("\(user)'s join: \(joined.compactString)") }
        return client
    }

    /// Drops `client` abnormally, then turns the loop until Redis holds its session and its node
    /// has handed over what it heard before the hold (`handing` gone from the record).
    func holdInRedis(_ client: Client) throws {
        disconnect(client, abnormally: true)
        let keys = ClusterKeys(configuration: brokers[client.node].configuration)
        guard let user = brokers[client.node].directory.session(id: client.sessionId)?.userId else {
            throw TestSupportError("\(client.sessionId) is not a session of node \(client.node)")
        }
        let record = keys.user(user).session(client.sessionId).record
        let held = keys.heldSessions(group: keys.userGroup(user))
        try pump(until: {
            (try? redis.command(["ZRANK", held, client.sessionId]))?.hasPrefix(":") == true
                && (try? redis.command(["HEXISTS", record, "handing"])) == ":0"
        }, what: "\(client.sessionId) held in Redis, its node's hand-over done")
    }
}

extension JSON {
    /// The string at `key` of an object.
    func string(_ key: String) -> String? { self[key]?.stringValue }
}
