import RollcallProtocol
@testable import RollcallCore

/// Drives a ``Broker`` through its transport contract with a manual clock and records
/// everything it asks the transport to do, per connection.
final class SessionTestBench {
    let clock = ManualClock()
    let broker: Broker
    private var nextConnection: UInt64 = 0
    private var nextId = 0
    /// Parsed objects sent to each connection, in order.
    private(set) var inbox: [ConnectionID: [JSON]] = [:]
    /// Close codes sent to each connection.
    private(set) var closes: [ConnectionID: CloseCode] = [:]

    init(_ configure: (inout Configuration) -> Void = { _ in }) {
        var configuration = Configuration()
        configuration.storage.path = nil
        configure(&configuration)
        var seed = SplitMix64(seed: 42)
        _ = seed.next()
        broker = Broker(configuration: configuration, clock: clock, random: seed)
    }

    /// Opens a new connection.
    func open() -> ConnectionID {
        nextConnection += 1
        let connection = ConnectionID(nextConnection)
        apply(broker.handle(.opened(connection)))
        return connection
    }

    /// Sends raw text and returns what the connection received because of it.
    @discardableResult
    func sendRaw(_ text: String, on connection: ConnectionID) -> [JSON] {
        let before = inbox[connection]?.count ?? 0
        apply(broker.handle(.received(connection, Array(text.utf8))))
        return Array((inbox[connection] ?? []).dropFirst(before))
    }

    /// Sends a request and returns its reply.
    @discardableResult
    func request(_ op: String, _ arguments: JSONObject = JSONObject(), on connection: ConnectionID) -> JSON {
        nextId += 1
        var frame = arguments
        frame["id"] = .int(nextId)
        frame["op"] = .string(op)
        let received = sendRaw(JSON.object(frame).compactString, on: connection)
        return received.first { $0["id"] == .int(nextId) } ?? .null
    }

    /// Opens a connection and logs in.
    func login(_ userId: String, platform: String = "web", extra: JSONObject = JSONObject()) -> (ConnectionID, JSON) {
        let connection = open()
        var arguments = extra
        arguments["userId"] = .string(userId)
        arguments["platform"] = .string(platform)
        let reply = request("login", arguments, on: connection)
        return (connection, reply)
    }

    /// Reports that a connection ended.
    func end(_ connection: ConnectionID, _ how: ConnectionEnd) {
        apply(broker.handle(.ended(connection, how)))
    }

    /// Advances the clock and delivers a tick.
    func advance(seconds: Double) {
        clock.advance(bySeconds: seconds)
        apply(broker.handle(.tick))
    }

    /// Shuts the broker down.
    func shutdown() { apply(broker.handle(.shutdown)) }

    func apply(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .send(let connection, let bytes, _):
                // Every object must be compact JSON without raw newlines (batching relies on it).
                precondition(!bytes.contains(0x0A), "raw newline in an outbound object")
                let value = (try? JSONParser.parse(bytes)) ?? .string("<unparseable>")
                inbox[connection, default: []].append(value)
            case .close(let connection, let code, _):
                closes[connection] = code
            case .store, .listen, .unlisten:
                preconditionFailure("a standalone broker asked the cluster store")
            case .notifyBackend, .respond:
                break
            }
        }
    }

    /// Everything a connection received so far.
    func received(on connection: ConnectionID) -> [JSON] { inbox[connection] ?? [] }
}
