import Testing
@testable import RollcallCore
import RollcallProtocol

/// Drives a ``Broker`` through ``Broker/handle(_:)`` with real JSON frames and a manual
/// clock, for the user-status tests. Every action is recorded per connection.
final class StatusHarness {
    let clock: ManualClock
    private(set) var broker: Broker
    let store: any StatusStore
    var configuration: Configuration
    private var nextConnection: UInt64 = 0
    private var nextRequestId = 0
    /// Replies by connection, keyed by request id.
    private var replies: [ConnectionID: [Int: JSON]] = [:]
    /// Events not yet taken, by connection.
    private var pendingEvents: [ConnectionID: [JSON]] = [:]
    /// Raw bytes of every send, in order (to check that events are encoded once).
    private(set) var sends: [(ConnectionID, [UInt8])] = []
    /// Close actions.
    private(set) var closes: [(ConnectionID, CloseCode)] = []
    /// Events handed to the webhook sender, in order.
    private(set) var backendEvents: [BackendEvent] = []
    /// The result of the latest successful `login`.
    private(set) var lastLoginResult: JSON = .null

    init(store: any StatusStore = MemoryStatusStore(), clock: ManualClock = ManualClock(),
         _ configure: (inout Configuration) -> Void = { _ in }) {
        var configuration = Configuration()
        configuration.storage.path = nil
        configure(&configuration)
        self.configuration = configuration
        self.clock = clock
        self.store = store
        self.broker = Broker(configuration: configuration, clock: clock, store: store)
    }

    /// A new broker on the same store and clock (a restart; the old one is dropped).
    func restart() {
        broker = Broker(configuration: configuration, clock: clock, store: store)
        replies = [:]
        pendingEvents = [:]
    }

    // MARK: - Driving

    func run(_ event: InboundEvent) {
        for action in broker.handle(event) {
            switch action {
            case .send(let connection, let bytes, _):
                sends.append((connection, bytes))
                let value: JSON
                do { value = try JSONParser.parse(bytes) } catch {
                    Issue.record("broker sent invalid JSON: \(error)")
                    continue
                }
                if let id = value["id"]?.numberValue?.intValue, value["ok"] != nil {
                    replies[connection, default: [:]][id] = value
                } else {
                    pendingEvents[connection, default: []].append(value)
                }
            case .close(let connection, let code, _):
                closes.append((connection, code))
            case .store, .listen, .unlisten:
                Issue.record("a standalone broker asked the cluster store")
            case .notifyBackend(let event):
                backendEvents.append(event)
            case .respond:
                break
            }
        }
    }

    /// Opens a connection.
    func open() -> ConnectionID {
        nextConnection += 1
        let connection = ConnectionID(nextConnection)
        run(.opened(connection))
        return connection
    }

    /// Sends `{"id":N,"op":op,…arguments}` and returns the whole reply object.
    @discardableResult
    func send(_ connection: ConnectionID, _ op: String, _ arguments: KeyValuePairs<String, JSON> = [:]) -> JSON {
        nextRequestId += 1
        let id = nextRequestId
        var members: [(key: String, value: JSON)] = [("id", .int(id)), ("op", .string(op))]
        members.append(contentsOf: arguments.map { ($0.key, $0.value) })
        var writer = JSONWriter()
        writer.value(.object(JSONObject(members)))
        run(.received(connection, writer.bytes))
        guard let reply = replies[connection]?[id] else {
            Issue.record("no reply to \(op)")
            return .null
        }
        return reply
    }

    /// Sends a request that must succeed and returns its `result`.
    @discardableResult
    func ok(_ connection: ConnectionID, _ op: String, _ arguments: KeyValuePairs<String, JSON> = [:],
            sourceLocation: SourceLocation = #_sourceLocation) -> JSON {
        let reply = send(connection, op, arguments)
        #expect(reply["ok"] == .bool(true), "\(op) failed: \(reply)", sourceLocation: sourceLocation)
        return reply["result"] ?? .null
    }

    /// Sends a request that must fail and returns its `error` object.
    @discardableResult
    func fail(_ connection: ConnectionID, _ op: String, _ arguments: KeyValuePairs<String, JSON> = [:],
              sourceLocation: SourceLocation = #_sourceLocation) -> JSON {
        let reply = send(connection, op, arguments)
        #expect(reply["ok"] == .bool(false), "\(op) should have failed: \(reply)", sourceLocation: sourceLocation)
        return reply["error"] ?? .null
    }

    /// Opens a connection and logs in.
    func login(_ userId: String, platform: String = "web", customStatus: String? = nil,
               sourceLocation: SourceLocation = #_sourceLocation) -> ConnectionID {
        let connection = open()
        var arguments: [(String, JSON)] = [("userId", .string(userId)), ("platform", .string(platform))]
        if let customStatus { arguments.append(("customStatus", .string(customStatus))) }
        let reply = sendMembers(connection, "login", arguments)
        #expect(reply["ok"] == .bool(true), "login failed: \(reply)", sourceLocation: sourceLocation)
        lastLoginResult = reply["result"] ?? .null
        return connection
    }

    /// Resumes a held session with its token on a new connection.
    func resume(_ userId: String, token: String, customStatus: String? = nil) -> (ConnectionID, JSON) {
        let connection = open()
        var arguments: [(String, JSON)] = [("userId", .string(userId)), ("resumeToken", .string(token))]
        if let customStatus { arguments.append(("customStatus", .string(customStatus))) }
        return (connection, sendMembers(connection, "login", arguments))
    }

    private func sendMembers(_ connection: ConnectionID, _ op: String, _ arguments: [(String, JSON)]) -> JSON {
        nextRequestId += 1
        let id = nextRequestId
        var members: [(key: String, value: JSON)] = [("id", .int(id)), ("op", .string(op))]
        members.append(contentsOf: arguments.map { (key: $0.0, value: $0.1) })
        var writer = JSONWriter()
        writer.value(.object(JSONObject(members)))
        run(.received(connection, writer.bytes))
        return replies[connection]?[id] ?? .null
    }

    /// Client close frame.
    func close(_ connection: ConnectionID) { run(.ended(connection, .closeFrame)) }
    /// TCP drop: the session is held.
    func drop(_ connection: ConnectionID) { run(.ended(connection, .abnormal(.dropped))) }
    /// Moves time and delivers a tick.
    func advance(seconds: Double) {
        clock.advance(bySeconds: seconds)
        run(.tick)
    }
    /// Broker shutdown.
    func shutdown() { run(.shutdown) }

    // MARK: - Reading

    /// Takes every event the connection got since the last call.
    func events(_ connection: ConnectionID) -> [JSON] {
        pendingEvents.removeValue(forKey: connection) ?? []
    }

    /// Takes the connection's events of one kind.
    func events(_ connection: ConnectionID, named name: String) -> [JSON] {
        events(connection).filter { $0["event"] == .string(name) }
    }

    /// Forgets every event received so far.
    func clearEvents() { pendingEvents = [:] }
}

extension JSON {
    /// `statuses` of a userStatus event or reply, as (userId → record).
    var statusesByUser: [String: JSON] {
        var out: [String: JSON] = [:]
        for record in self["statuses"]?.arrayValue ?? [] {
            if let id = record["userId"]?.stringValue { out[id] = record }
        }
        return out
    }

    /// The strings of an array member.
    func strings(_ key: String) -> [String] { (self[key]?.arrayValue ?? []).compactMap(\.stringValue) }

    // `int(_:)` (an integer member) comes from Support/PresenceHarness.swift.

    /// `failed` as (userId, code) pairs.
    var failures: [String: String] {
        var out: [String: String] = [:]
        for item in self["failed"]?.arrayValue ?? [] {
            if let id = item["userId"]?.stringValue, let code = item["code"]?.stringValue { out[id] = code }
        }
        return out
    }
}

/// `["a","b"]` as a JSON array.
func ids(_ values: String...) -> JSON { .array(values.map { .string($0) }) }
/// An array of `n` generated ids `prefix0`…
func ids(prefix: String, count: Int) -> JSON { .array((0..<count).map { .string("\(prefix)\($0)") }) }
