import RollcallCore
import RollcallProtocol

/// Drives one fuzz input through the JSON parser and a fresh ``Broker`` (manual clock, memory
/// store) and checks the invariants the transport relies on. A violated invariant traps, which
/// libFuzzer reports as a crash and saves the input.
///
/// The input is split on the byte `0x1E` (record separator) into frames. Two connections log in
/// first; the frames then go to them in turn, with a `.tick` (clock +1.5 s) after every third
/// frame, an abrupt drop of the second connection in the middle and a final `.shutdown`.
enum FuzzHarness {
    /// Frames in one input are separated by this byte.
    static let frameSeparator: UInt8 = 0x1E

    /// Runs one input; traps on any violated invariant.
    static func run(_ input: [UInt8]) {
        checkParserRoundTrip(input)
        var configuration = Configuration()
        configuration.storage.path = nil
        let clock = ManualClock()
        let broker = Broker(configuration: configuration, clock: clock)
        var drive = BrokerDrive(broker: broker)
        let first = ConnectionID(1), second = ConnectionID(2)
        drive.open(first)
        drive.open(second)
        drive.request(Array(#"{"id":1,"op":"login","userId":"alice","platform":"web"}"#.utf8), on: first)
        drive.request(Array(#"{"id":1,"op":"login","userId":"bob","platform":"ios"}"#.utf8), on: second)
        drive.request(Array(#"{"id":2,"op":"join","channel":"room:1","state":{"mood":"ok"}}"#.utf8), on: second)

        let frames = input.split(separator: frameSeparator, omittingEmptySubsequences: false).prefix(64)
        for (index, frame) in frames.enumerated() {
            let bytes = Array(frame)
            // The transport only ever hands over complete, UTF-8 valid text messages.
            guard String(validating: bytes, as: UTF8.self) != nil else { continue }
            drive.request(bytes, on: index % 2 == 0 ? first : second)
            if index % 3 == 2 {
                clock.advance(byMilliseconds: 1_500)
                drive.tick()
            }
            if index == frames.count / 2 { drive.end(second) }
        }
        clock.advance(bySeconds: 120)
        drive.tick()
        drive.shutdown()
    }

    /// A parsed value re-encodes to compact JSON that parses back to the same value.
    static func checkParserRoundTrip(_ input: [UInt8]) {
        guard let value = try? JSONParser.parse(input) else { return }
        let encoded = value.encoded()
        precondition(!encoded.contains(0x0A), "writer emitted a raw newline")
        guard let again = try? JSONParser.parse(encoded) else { preconditionFailure("writer output does not parse") }
        precondition(again == value, "round trip changed the value")
    }
}

/// Feeds events to the broker and checks every action it returns.
struct BrokerDrive {
    let broker: Broker
    /// Connections the broker has not closed and the transport has not ended.
    private var open: Set<ConnectionID> = []

    init(broker: Broker) { self.broker = broker }

    mutating func open(_ connection: ConnectionID) {
        open.insert(connection)
        _ = check(broker.handle(.opened(connection)))
    }

    /// Sends one request frame: an open connection gets exactly one reply to it, unless the
    /// broker closes the connection because of it (then at most one).
    mutating func request(_ bytes: [UInt8], on connection: ConnectionID) {
        guard open.contains(connection) else { return }
        let outcome = check(broker.handle(.received(connection, bytes)))
        let replies = outcome.replies[connection, default: 0]
        if outcome.closed.contains(connection) {
            precondition(replies <= 1, "\(replies) replies before a close")
        } else {
            precondition(replies == 1, "a request frame got \(replies) replies")
        }
    }

    mutating func tick() { _ = check(broker.handle(.tick)) }

    mutating func end(_ connection: ConnectionID) {
        guard open.remove(connection) != nil else { return }
        _ = check(broker.handle(.ended(connection, .abnormal(.dropped))))
    }

    mutating func shutdown() {
        _ = check(broker.handle(.shutdown))
    }

    /// Validates every outbound object; counts replies and records closes per connection.
    private mutating func check(_ actions: [Action]) -> (replies: [ConnectionID: Int], closed: Set<ConnectionID>) {
        var replies: [ConnectionID: Int] = [:]
        var closed: Set<ConnectionID> = []
        for action in actions {
            switch action {
            case .send(let connection, let bytes, _):
                precondition(!closed.contains(connection), "send after close")
                precondition(!bytes.contains(0x0A) && !bytes.contains(0x0D), "raw newline in an outbound object")
                guard case .object(let object)? = try? JSONParser.parse(bytes) else {
                    preconditionFailure("outbound bytes are not one JSON object")
                }
                precondition(JSON.object(object).encoded() == bytes, "outbound object is not compact JSON")
                if object["event"] == nil { replies[connection, default: 0] += 1 }
            case .close(let connection, _, _):
                closed.insert(connection)
                open.remove(connection)
            case .store, .listen, .unlisten:
                preconditionFailure("a standalone broker never asks the cluster store")
            case .notifyBackend(let event):
                precondition(event.bytes.starts(with: Array(#"{"event":"#.utf8)), "backend event is not an event object")
            case .respond:
                preconditionFailure("a server API answer without a server API request")
            }
        }
        return (replies, closed)
    }
}
