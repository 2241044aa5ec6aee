@testable import RollcallCore
import RollcallProtocol
import Testing

/// A broker on a manual clock with fake connections: sends real JSON request frames through
/// `Broker.handle` and collects, per connection, the replies and events it is sent.
final class PresenceHarness {
    let clock = ManualClock()
    let broker: Broker
    private var lastConnection: UInt64 = 0
    private var lastRequestId = 0
    /// Replies per connection, by request id.
    private var replies: [ConnectionID: [Int: JSON]] = [:]
    /// Events not yet taken, per connection.
    private var pendingEvents: [ConnectionID: [JSON]] = [:]
    /// Raw bytes of every event, per connection, in order (to check shared encodings).
    private(set) var rawEvents: [ConnectionID: [[UInt8]]] = [:]
    /// Events handed to the webhook sender, in order.
    private(set) var backendEvents: [BackendEvent] = []
    /// Close codes the broker sent.
    private(set) var closes: [ConnectionID: CloseCode] = [:]
    /// Close reasons the broker sent.
    private(set) var closeReasons: [ConnectionID: String] = [:]
    /// Answers to server API requests, by request id.
    private var apiAnswers: [APIRequestID: (status: Int, body: JSON)] = [:]
    private var lastAPIRequest: UInt64 = 0
    /// Called with each event as it arrives (before it is queued for `events`).
    var onEvent: ((ConnectionID, JSON) -> Void)?

    /// A broker with the default configuration changed by `configure` (durable data in `store`,
    /// no request rate limit).
    init(authenticator: (any LoginAuthenticator)? = nil, store: any StatusStore = MemoryStatusStore(),
         _ configure: (inout Configuration) -> Void = { _ in }) {
        var configuration = Configuration()
        configuration.storage.path = nil
        configuration.limits.requestsPerSecond = 1_000_000
        configuration.limits.requestBurst = 1_000_000
        configure(&configuration)
        broker = Broker(configuration: configuration, clock: clock, store: store, authenticator: authenticator)
    }

    /// Feeds one event to the broker and records what it sends.
    func run(_ event: InboundEvent) {
        for action in broker.handle(event) {
            switch action {
            case .send(let connection, let bytes, _):
                let value: JSON
                do { value = try JSONParser.parse(bytes) } catch {
                    Issue.record("broker sent invalid JSON: \(error)")
                    continue
                }
                if value["ok"] != nil, let id = value["id"]?.numberValue?.intValue {
                    replies[connection, default: [:]][id] = value
                } else {
                    rawEvents[connection, default: []].append(bytes)
                    onEvent?(connection, value)
                    pendingEvents[connection, default: []].append(value)
                }
            case .close(let connection, let code, let reason):
                closes[connection] = code
                closeReasons[connection] = reason
            case .store, .listen, .unlisten:
                Issue.record("a standalone broker asked the cluster store")
            case .notifyBackend(let event):
                backendEvents.append(event)
            case .respond(let id, let status, let body):
                apiAnswers[id] = (status, (try? JSONParser.parse(body)) ?? .null)
            }
        }
    }

    /// Sends a server API request (PROTOCOL §10) with `body` as its JSON body; returns the
    /// HTTP status and the decoded answer, which a single broker gives within the same call.
    func api(_ op: String, _ body: JSON = .object([:])) -> (status: Int, body: JSON) {
        apiRaw(op, body.encoded())
    }

    /// A server API request with raw body bytes.
    func apiRaw(_ op: String, _ body: [UInt8]) -> (status: Int, body: JSON) {
        lastAPIRequest += 1
        let id = APIRequestID(lastAPIRequest)
        run(.api(id, op: op, body: body))
        guard let answer = apiAnswers.removeValue(forKey: id) else {
            Issue.record("no answer to the server API's \(op)")
            return (0, .null)
        }
        return answer
    }

    /// Opens a connection and logs in as `userId`.
    func login(_ userId: String, _ extra: KeyValuePairs<String, JSON> = [:]) throws -> HarnessClient {
        lastConnection += 1
        let connection = ConnectionID(lastConnection)
        run(.opened(connection))
        let client = HarnessClient(harness: self, connection: connection, userId: userId)
        var arguments: [(String, JSON)] = [("userId", .string(userId))]
        arguments.append(contentsOf: extra.map { ($0.key, $0.value) })
        let result = try client.ok("login", arguments)
        client.resumeToken = result["resumeToken"]?.stringValue ?? ""
        client.lastLoginResult = result
        return client
    }

    /// Sends a request frame; returns the reply.
    func request(on connection: ConnectionID, _ op: String, _ arguments: [(String, JSON)]) -> JSON {
        lastRequestId += 1
        let id = lastRequestId
        var members: [(key: String, value: JSON)] = [("id", .int(id)), ("op", .string(op))]
        members.append(contentsOf: arguments.map { (key: $0.0, value: $0.1) })
        run(.received(connection, JSON.object(JSONObject(members)).encoded()))
        guard let reply = replies[connection]?.removeValue(forKey: id) else {
            Issue.record("no reply to \(op)")
            return .null
        }
        return reply
    }

    /// Takes the events received so far on `connection`.
    func takeEvents(_ connection: ConnectionID) -> [JSON] {
        pendingEvents.removeValue(forKey: connection) ?? []
    }

    /// Advances the clock and lets due timers run.
    func advance(seconds: Double) {
        clock.advance(bySeconds: seconds)
        run(.tick)
    }
}

/// Grants `room:*`-style patterns to users whose id starts with `limited`, everything to others.
struct PatternAuthenticator: LoginAuthenticator {
    let patterns: [String]
    func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError> {
        .success(userId.string.hasPrefix("limited") ? Grant(channelPatterns: patterns) : .unlimited)
    }
}

/// Something a failing request returned instead of a result.
struct HarnessRequestFailed: Error, CustomStringConvertible {
    let op: String
    let reply: JSON
    var description: String { "\(op) failed: \(reply.compactString)" }
}

/// One logged-in fake connection.
final class HarnessClient {
    let harness: PresenceHarness
    private(set) var connection: ConnectionID
    let userId: String
    var resumeToken = ""

    init(harness: PresenceHarness, connection: ConnectionID, userId: String) {
        self.harness = harness
        self.connection = connection
        self.userId = userId
    }

    /// Sends a request; returns the whole reply.
    @discardableResult
    func send(_ op: String, _ arguments: [(String, JSON)] = []) -> JSON {
        harness.request(on: connection, op, arguments)
    }

    /// Sends a request that must succeed; returns its result.
    @discardableResult
    func ok(_ op: String, _ arguments: [(String, JSON)] = []) throws -> JSON {
        let reply = send(op, arguments)
        guard reply["ok"]?.boolValue == true, let result = reply["result"] else { throw HarnessRequestFailed(op: op, reply: reply) }
        return result
    }

    /// Sends a request that must fail; returns its error code.
    func errorCode(_ op: String, _ arguments: [(String, JSON)] = []) -> String? {
        let reply = send(op, arguments)
        return reply["error"]?["code"]?.stringValue
    }

    /// Takes the events received so far.
    func events() -> [JSON] { harness.takeEvents(connection) }

    /// Takes the presence events received so far.
    func presenceEvents() -> [JSON] { events().filter { $0["event"]?.stringValue == "presence" } }

    /// Ends with a close frame.
    func close() { harness.run(.ended(connection, .closeFrame)) }

    /// Ends without a close frame (the session is held).
    func drop() { harness.run(.ended(connection, .abnormal(.dropped))) }

    /// Resumes this client's held session on a new connection; returns the login result.
    @discardableResult
    func resume() throws -> JSON {
        let fresh = try harness.login(userId, ["resumeToken": .string(resumeToken)])
        connection = fresh.connection
        resumeToken = fresh.resumeToken
        return fresh.lastLoginResult ?? .null
    }

    var lastLoginResult: JSON?
}

extension JSON {
    /// The members of a `{k: "v"}` object as a dictionary (test convenience).
    var stringMap: [String: String] {
        var map: [String: String] = [:]
        for member in objectValue?.members ?? [] { map[member.key] = member.value.stringValue ?? "<non-string>" }
        return map
    }

    /// An integer member (test convenience).
    func int(_ key: String) -> Int? { self[key]?.numberValue?.intValue }

    /// A string member (test convenience).
    func string(_ key: String) -> String? { self[key]?.stringValue }
}
