import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Issue 5, "Hostile input": a table of malformed and hostile inputs against the real
/// binary. Each row gets a fresh hostile connection (logged in and joined to the watched
/// channel, or not logged in at all), sends its input and asserts the documented reply code
/// (with the id echoed when it was readable) or close code.
///
/// After every row a well-behaved neighbour in the same channel must be undisturbed: its
/// connection is open, its roster (snapshot + events) equals `getOnlineUsers`, presence
/// `seq` has no gap, and a message published by a third client reaches it, in order.
@Suite("Hostile input")
struct HostileInputTests {
    static let channel = "room:hostile"

    /// Once on one broker, once on a cluster (PROTOCOL §9: bad input stays as in v1 on every
    /// node), where the hostile connections are on n1, the neighbour on n2, the publisher on n3.
    @Test("hostile input table: documented reply or close code; the neighbour sees no disruption", arguments: [false, true])
    func table(onCluster: Bool) throws {
        let config: [String: Any] = ["presence": ["timeoutSeconds": 5]]
        let cluster: ClusterProcess? = try onCluster ? ClusterProcess(config: config) : nil
        let single: BrokerProcess? = try onCluster ? nil : BrokerProcess(config: config)
        let nodes = cluster.map { cluster in (0..<3).map { cluster.node($0) } } ?? [single!, single!, single!]
        let broker = nodes[0]
        let neighbour = try ChannelWatcher(broker: nodes[1], userId: "neighbour", channel: Self.channel, publisher: "publisher")
        let publisher = try nodes[2].session("publisher")
        let rows = HostileRow.table
        #expect(rows.count >= 40)
        #expect(Set(rows.map(\.name)).count == rows.count, "row names are unique")

        for (index, row) in rows.enumerated() {
            if let offend = row.rawOffence {
                try runRawRow(row.name, index: index, broker: broker, offend: offend)
            } else {
                try runRow(row, index: index, broker: broker, neighbour: neighbour)
            }

            // The neighbour: still connected, roster exact, messages in order.
            #expect(neighbour.connection.isOpen, "\(row.name): the neighbour's connection closed")
            if let difference = try neighbour.checkRoster() {
                Issue.record("\(row.name): \(difference)")
            }
            var published: Reply
            repeat { // a well-behaved publisher waits out RATE_LIMITED
                published = try publisher.request("publish", ["channel": .string(Self.channel), "message": ["n": .int(index)]])
                if let retry = published.retryAfterMs { Thread.sleep(forTimeInterval: Double(retry) / 1000) }
            } while published.errorCode == .rateLimited
            #expect(published.ok, "\(row.name): publish \(published)")
            #expect(neighbour.waitForMessage(index), "\(row.name): message \(index) did not reach the neighbour")
        }

        #expect(neighbour.problems.isEmpty, "\(neighbour.problems)")
        #expect(neighbour.messageNumbers == Array(0..<rows.count), "every message once, in order")
        #expect(try neighbour.checkRoster() == nil)
        for node in nodes {
            #expect(try RawHTTP.get(port: node.port, path: "/healthz").status == 200)
            #expect(node.isRunning, "the broker survived the table")
        }
    }

    /// Plays one row on a fresh lws connection; closes it afterwards if the row did not.
    func runRow(_ row: HostileRow, index: Int, broker: BrokerProcess, neighbour: ChannelWatcher) throws {
        let hostile = try broker.connect()
        if row.start == .loggedIn {
            #expect(try hostile.login(userId: "hostile-\(index)").ok, "\(row.name): login")
            #expect(try hostile.request("join", ["channel": .string(Self.channel), "state": ["row": .string("\(index)")]]).ok,
                    "\(row.name): join")
        }
        do {
            try row.run(HostileProbe(connection: hostile, row: row.name, broker: broker))
        } catch {
            Issue.record("\(row.name): \(error)")
        }
        if hostile.isOpen {
            if row.start == .loggedIn, let difference = try neighbour.checkRoster() {
                Issue.record("\(row.name), hostile still connected: \(difference)")
            }
            hostile.close(code: 1000)
            _ = try? hostile.waitForClose(timeout: .seconds(10))
        }
    }

    /// A row whose offence makes the broker close while the client is still sending: read
    /// with a raw socket. The broker closes the TCP connection right after its close frame;
    /// the lws client, still writing, then meets a reset and reports a drop instead of the
    /// code (a raw socket reads the close frame that arrived before the reset).
    func runRawRow(_ name: String, index: Int, broker: BrokerProcess,
                   offend: (SilentWebSocket) throws -> UInt16) throws {
        let raw = try SilentWebSocket(port: broker.port)
        try raw.sendText("{\"id\":1,\"op\":\"login\",\"userId\":\"raw-\(index)\"}")
        try raw.sendText("{\"id\":2,\"op\":\"join\",\"channel\":\"\(Self.channel)\"}")
        #expect(raw.waitForText(containing: "\"id\":2,\"ok\":true", timeout: 10), "\(name): joined first")
        let code = try offend(raw)
        let result = raw.readUntilClosed(timeout: 10)
        #expect(result.closeCode == code, "\(name): close code \(String(describing: result.closeCode))")
        #expect(result.closed, "\(name): the broker ended the connection")
        raw.socket.close()
    }

    @Test("5000-deep nesting is INVALID_JSON (bounded decoder), and 64 levels still parse")
    func depthBound() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        let cases: [(String, ErrorCode?)] = [
            (HostileRow.nestedPing(arrays: 63), nil),
            (HostileRow.nestedPing(arrays: 64), .invalidJSON),
            (HostileRow.nestedPing(arrays: 5000), .invalidJSON),
        ]
        for (text, code) in cases {
            let id: JSON = code == nil ? "deep" : .null
            connection.expectReply(id: id)
            connection.sendRawText(text)
            let reply = try connection.waitForReply(id: id, timeout: .seconds(10))
            #expect(reply.errorCode == code, "\(text.count) bytes → \(reply)")
        }
        #expect(try connection.request("ping").ok)
        #expect(broker.isRunning)
    }
}

/// One hostile connection while a row runs.
struct HostileProbe {
    let connection: RollcallConnection
    let row: String
    let broker: BrokerProcess

    /// Sends `bytes` as one text message and expects one reply with `id`: success when
    /// `code` is nil, else that error code. The connection must stay open and usable.
    @discardableResult
    func expectReply(to bytes: [UInt8], id: JSON, code: ErrorCode?, sender: ((RollcallConnection) -> Void)? = nil) throws -> Reply {
        connection.expectReply(id: id)
        if let sender { sender(connection) } else { connection.sendRawText(bytes) }
        let reply = try connection.waitForReply(id: id, timeout: .seconds(10))
        if let code {
            #expect(reply.errorCode == code, "\(row): \(reply)")
            #expect(reply.errorMessage?.isEmpty == false, "\(row): an error has a message")
        } else {
            #expect(reply.ok, "\(row): \(reply)")
        }
        #expect(reply.id == id, "\(row): id echoed")
        #expect(connection.isOpen, "\(row): the connection stays open")
        let after = try connection.request("ping", id: "after")
        #expect(after.ok || after.errorCode == .notLoggedIn, "\(row): usable afterwards: \(after)")
        return reply
    }

    /// Has `send` offend and expects the broker to close with `code`.
    func expectClose(_ code: UInt16, send: (RollcallConnection) -> Void) throws {
        send(connection)
        let close = try connection.waitForClose(timeout: .seconds(10))
        #expect(close.code == code, "\(row): \(close)")
        #expect(close.closedByServer, "\(row): \(close)")
    }
}

/// A row of the hostile-input table.
struct HostileRow: Sendable {
    enum Start: Sendable { case fresh, loggedIn }

    let name: String
    let start: Start
    let run: @Sendable (HostileProbe) throws -> Void
    /// For rows sent from a raw socket: sends the offence, returns the expected close code.
    var rawOffence: (@Sendable (SilentWebSocket) throws -> UInt16)? = nil

    init(name: String, start: Start, run: @escaping @Sendable (HostileProbe) throws -> Void) {
        self.name = name
        self.start = start
        self.run = run
    }

    /// A row played on a raw socket (logged in and joined): `offend` sends the offence and
    /// returns the close code the broker must send.
    static func raw(_ name: String, _ offend: @escaping @Sendable (SilentWebSocket) throws -> UInt16) -> HostileRow {
        var row = HostileRow(name: name, start: .fresh) { _ in }
        row.rawOffence = offend
        return row
    }

    /// A text frame answered with `code` (nil: success) and `id`.
    static func reply(_ name: String, _ start: Start, _ frame: String, _ code: ErrorCode?, id: JSON = "r") -> HostileRow {
        HostileRow(name: name, start: start) { try $0.expectReply(to: Array(frame.utf8), id: id, code: code) }
    }

    /// ``reply(_:_:_:_:id:)`` on a logged-in connection.
    static func reply(_ name: String, _ frame: String, _ code: ErrorCode?, id: JSON = "r") -> HostileRow {
        reply(name, .loggedIn, frame, code, id: id)
    }

    /// Raw bytes (valid UTF-8, not necessarily JSON) answered with `code` and `id`.
    static func bytes(_ name: String, _ frame: [UInt8], _ code: ErrorCode?, id: JSON = "r") -> HostileRow {
        HostileRow(name: name, start: .loggedIn) { try $0.expectReply(to: frame, id: id, code: code) }
    }

    /// A request built from `args` (after `id` and `op`), answered with `code`.
    static func op(_ name: String, _ start: Start, _ op: String, _ args: String, _ code: ErrorCode?) -> HostileRow {
        reply(name, start, "{\"id\":\"r\",\"op\":\"\(op)\"\(args.isEmpty ? "" : ",")\(args)}", code)
    }

    /// ``op(_:_:_:_:_:)`` on a logged-in connection.
    static func op(_ name: String, _ op: String, _ args: String, _ code: ErrorCode?) -> HostileRow {
        self.op(name, .loggedIn, op, args, code)
    }

    /// Something that makes the broker close the connection with `code`.
    static func close(_ name: String, _ code: UInt16, _ send: @escaping @Sendable (RollcallConnection) -> Void) -> HostileRow {
        HostileRow(name: name, start: .loggedIn) { try $0.expectClose(code, send: send) }
    }

    static func custom(_ name: String, _ start: Start = .loggedIn, _ run: @escaping @Sendable (HostileProbe) throws -> Void) -> HostileRow {
        HostileRow(name: name, start: start, run: run)
    }

    // MARK: Building blocks

    static let channel = HostileInputTests.channel
    static let bigInteger = "9" + String(repeating: "0", count: 399)
    static let defaultFrameLimit = 65536

    static func nested(_ open: String, _ close: String, depth: Int, inner: String = "0") -> String {
        String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
    }

    /// A ping whose extra argument holds `arrays` nested arrays (the request object is one
    /// more level).
    static func nestedPing(arrays: Int) -> String {
        "{\"id\":\"deep\",\"op\":\"ping\",\"x\":\(nested("[", "]", depth: arrays))}"
    }

    /// `{"k0":"v",…}` with `count` distinct keys.
    static func manyKeys(_ count: Int, value: String = "v") -> String {
        "{" + (0..<count).map { "\"k\($0)\":\"\(value)\"" }.joined(separator: ",") + "}"
    }

    static func userIds(_ count: Int) -> String {
        "[" + (0..<count).map { "\"u\($0)\"" }.joined(separator: ",") + "]"
    }

    static func wrap(_ bytes: [UInt8]) -> [UInt8] {
        Array("{\"id\":\"r\",\"op\":\"ping\",\"x\":\"".utf8) + bytes + Array("\"}".utf8)
    }

    /// `{"id":"r","op":"ping","x":"ppp…"}` of exactly `total` bytes.
    static func paddedPing(total: Int) -> [UInt8] {
        let skeleton = "{\"id\":\"r\",\"op\":\"ping\",\"x\":\"\"}"
        return Array("{\"id\":\"r\",\"op\":\"ping\",\"x\":\"\(String(repeating: "p", count: total - skeleton.utf8.count))\"}".utf8)
    }

    // MARK: The table

    static let table: [HostileRow] = invalidJSON + structure + session + login + presence + userStatus + transport + floods

    static let invalidJSON: [HostileRow] = [
        reply("truncated object", "{\"id\":\"r\",\"op\":\"ping\"", .invalidJSON, id: .null),
        reply("truncated inside a string", "{\"id\":\"r\",\"op\":\"pi", .invalidJSON, id: .null),
        reply("trailing garbage", "{\"id\":\"r\",\"op\":\"ping\"} x", .invalidJSON, id: .null),
        reply("two objects in one frame", "{\"id\":1,\"op\":\"ping\"}{\"id\":2,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("two objects separated by a newline", "{\"id\":1,\"op\":\"ping\"}\n{\"id\":2,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("single quotes", "{'id':'r','op':'ping'}", .invalidJSON, id: .null),
        reply("unquoted keys", "{id:\"r\",op:\"ping\"}", .invalidJSON, id: .null),
        reply("NaN", "{\"id\":\"r\",\"op\":\"ping\",\"x\":NaN}", .invalidJSON, id: .null),
        reply("Infinity", "{\"id\":\"r\",\"op\":\"ping\",\"x\":-Infinity}", .invalidJSON, id: .null),
        reply("block comment", "{\"id\":\"r\",/* hi */\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("line comment", "// hi\n{\"id\":\"r\",\"op\":\"ping\"}", .invalidJSON, id: .null),
        bytes("UTF-8 byte order mark", [0xEF, 0xBB, 0xBF] + Array("{\"id\":\"r\",\"op\":\"ping\"}".utf8), .invalidJSON, id: .null),
        reply("empty frame", "", .invalidJSON, id: .null),
        reply("whitespace only", " \t\r\n ", .invalidJSON, id: .null),
        reply("trailing comma in an object", "{\"id\":\"r\",\"op\":\"ping\",}", .invalidJSON, id: .null),
        reply("trailing comma in an array", "{\"id\":\"r\",\"op\":\"ping\",\"x\":[1,]}", .invalidJSON, id: .null),
        reply("leading zero", "{\"id\":01,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("hex number", "{\"id\":0x1F,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("plus sign", "{\"id\":+1,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("bare minus", "{\"id\":-,\"op\":\"ping\"}", .invalidJSON, id: .null),
        reply("misspelt literal", "{\"id\":\"r\",\"op\":\"ping\",\"x\":tru}", .invalidJSON, id: .null),
        reply("invalid escape", "{\"id\":\"r\",\"op\":\"ping\",\"x\":\"\\x41\"}", .invalidJSON, id: .null),
        bytes("raw control character in a string", wrap([0x61, 0x01, 0x62]), .invalidJSON, id: .null),
        bytes("raw newline in a string", wrap([0x61, 0x0A, 0x62]), .invalidJSON, id: .null),
        reply("lone high surrogate in a userId", .fresh, "{\"id\":\"r\",\"op\":\"login\",\"userId\":\"a\\ud800\"}", .invalidJSON, id: .null),
        reply("lone low surrogate in a channel name", "{\"id\":\"r\",\"op\":\"join\",\"channel\":\"\\udc00\"}", .invalidJSON, id: .null),
        reply("reversed surrogate pair in a channel name", "{\"id\":\"r\",\"op\":\"join\",\"channel\":\"\\udc00\\ud800\"}", .invalidJSON, id: .null),
        reply("high surrogate followed by a letter", "{\"id\":\"r\",\"op\":\"getState\",\"channel\":\"c\",\"userId\":\"\\ud800A\"}", .invalidJSON, id: .null),
        reply("5000-deep arrays", nested("[", "]", depth: 5000), .invalidJSON, id: .null),
        reply("5000-deep objects", nested("{\"a\":", "}", depth: 5000), .invalidJSON, id: .null),
        reply("5000-deep message in a publish",
              "{\"id\":\"r\",\"op\":\"publish\",\"channel\":\"\(channel)\",\"message\":\(nested("[", "]", depth: 5000))}", .invalidJSON, id: .null),
        reply("nesting one past the bound", nestedPing(arrays: 64), .invalidJSON, id: .null),
        reply("nesting at the bound", nestedPing(arrays: 63), nil, id: "deep"),
    ]

    static let structure: [HostileRow] = [
        reply("array instead of an object", "[1,2,3]", .invalidRequest, id: .null),
        reply("string instead of an object", "\"ping\"", .invalidRequest, id: .null),
        reply("null instead of an object", "null", .invalidRequest, id: .null),
        reply("number instead of an object", "42", .invalidRequest, id: .null),
        reply("empty object", "{}", .invalidRequest, id: .null),
        reply("object without op", "{\"id\":\"r\",\"channel\":\"x\"}", .invalidRequest),
        reply("op is a number", "{\"id\":\"r\",\"op\":5}", .invalidRequest),
        reply("op is null", "{\"id\":\"r\",\"op\":null}", .invalidRequest),
        reply("op is an array", "{\"id\":\"r\",\"op\":[\"ping\"]}", .invalidRequest),
        reply("id is an object", "{\"id\":{\"a\":1},\"op\":\"ping\"}", .invalidRequest, id: .null),
        reply("id is an array", "{\"id\":[1],\"op\":\"ping\"}", .invalidRequest, id: .null),
        reply("id is a boolean", "{\"id\":true,\"op\":\"ping\"}", .invalidRequest, id: .null),
        reply("id 1e400 is echoed", "{\"id\":1e400,\"op\":\"ping\"}", nil, id: .number(JSONNumber(literal: "1e400"))),
        reply("id with 400 digits is echoed", "{\"id\":\(bigInteger),\"op\":\"ping\"}", nil, id: .number(JSONNumber(literal: bigInteger))),
        reply("id of 10 KB is echoed", "{\"id\":\"\(String(repeating: "i", count: 10_000))\",\"op\":\"ping\"}", nil,
              id: .string(String(repeating: "i", count: 10_000))),
        reply("duplicate op: the last one wins", "{\"id\":\"r\",\"op\":\"logout\",\"op\":\"ping\"}", nil),
        op("unknown op", "teleport", "\"to\":\"mars\"", .unknownOp),
        op("empty op", "", "", .unknownOp),
        op("op __proto__", "__proto__", "", .unknownOp),
        op("op of 10 KB", String(repeating: "o", count: 10_000), "", .unknownOp),
        op("op differing in case", "PING", "", .unknownOp),
        op("1000 extra members", "ping", (0..<1000).map { "\"extra\($0)\":\($0)" }.joined(separator: ","), nil),
    ]

    static let session: [HostileRow] = [
        op("known op before login", .fresh, "join", "\"channel\":\"\(channel)\"", .notLoggedIn),
        op("unknown op before login", .fresh, "teleport", "", .notLoggedIn),
        op("logout before login", .fresh, "logout", "", .notLoggedIn),
        op("publish before login", .fresh, "publish", "\"channel\":\"\(channel)\",\"message\":\"spoof\"", .notLoggedIn),
        op("second login, same user", "login", "\"userId\":\"hostile\"", .alreadyLoggedIn),
        op("second login, other user", "login", "\"userId\":\"neighbour\"", .alreadyLoggedIn),
    ]

    static let login: [HostileRow] = [
        op("login userId number", .fresh, "login", "\"userId\":42", .invalidRequest),
        op("login userId null", .fresh, "login", "\"userId\":null", .invalidRequest),
        op("login userId missing", .fresh, "login", "\"platform\":\"web\"", .invalidRequest),
        op("login userId array", .fresh, "login", "\"userId\":[\"a\"]", .invalidRequest),
        op("login userId empty", .fresh, "login", "\"userId\":\"\"", .invalidArgument),
        op("login userId 129 bytes", .fresh, "login", "\"userId\":\"\(String(repeating: "u", count: 129))\"", .invalidArgument),
        op("login userId with NUL", .fresh, "login", "\"userId\":\"a\\u0000b\"", .invalidArgument),
        op("login userId with U+001F", .fresh, "login", "\"userId\":\"a\\u001fb\"", .invalidArgument),
        op("login userId with DEL", .fresh, "login", "\"userId\":\"a\\u007fb\"", .invalidArgument),
        op("login userId with C1 control U+0085", .fresh, "login", "\"userId\":\"a\\u0085b\"", .invalidArgument),
        op("login userId with escaped newline", .fresh, "login", "\"userId\":\"a\\nb\"", .invalidArgument),
        op("login userId with a valid surrogate pair", .fresh, "login", "\"userId\":\"smile-\\ud83d\\ude00\"", nil),
        op("login platform number", .fresh, "login", "\"userId\":\"p1\",\"platform\":7", .invalidRequest),
        op("login platform null is absent", .fresh, "login", "\"userId\":\"p2\",\"platform\":null", nil),
        op("login platform unknown", .fresh, "login", "\"userId\":\"p3\",\"platform\":\"toaster\"", .invalidArgument),
        op("login customStatus object", .fresh, "login", "\"userId\":\"p4\",\"customStatus\":{}", .invalidRequest),
        op("login customStatus 65 bytes", .fresh, "login", "\"userId\":\"p5\",\"customStatus\":\"\(String(repeating: "c", count: 65))\"", .customStatusTooLong),
        op("login presenceTimeout string", .fresh, "login", "\"userId\":\"p6\",\"presenceTimeout\":\"10\"", .invalidRequest),
        custom("login presenceTimeout 1e400 is clamped", .fresh) { probe in
            let reply = try probe.expectReply(to: Array("{\"id\":\"r\",\"op\":\"login\",\"userId\":\"p7\",\"presenceTimeout\":1e400}".utf8), id: "r", code: nil)
            #expect(reply["presenceTimeout"]?.numberValue?.doubleValue == 300, "\(reply)")
        },
        custom("login presenceTimeout -1e400 is clamped", .fresh) { probe in
            let reply = try probe.expectReply(to: Array("{\"id\":\"r\",\"op\":\"login\",\"userId\":\"p8\",\"presenceTimeout\":-1e400}".utf8), id: "r", code: nil)
            #expect(reply["presenceTimeout"]?.numberValue?.doubleValue == 5, "\(reply)")
        },
        op("login token number", .fresh, "login", "\"userId\":\"p9\",\"token\":5", .invalidRequest),
        op("login resumeToken array", .fresh, "login", "\"userId\":\"p10\",\"resumeToken\":[]", .invalidRequest),
        op("login resumeToken of another user is a fresh login", .fresh, "login", "\"userId\":\"p11\",\"resumeToken\":\"00000000000000000000000000000000\"", nil),
    ]

    static let presence: [HostileRow] = [
        op("join channel number", "join", "\"channel\":5", .invalidRequest),
        op("join channel null", "join", "\"channel\":null", .invalidRequest),
        op("join channel empty", "join", "\"channel\":\"\"", .invalidArgument),
        op("join channel with NUL", "join", "\"channel\":\"a\\u0000\"", .invalidArgument),
        op("join channel with ESC", "join", "\"channel\":\"\\u001b[31m\"", .invalidArgument),
        op("join channel 129 bytes", "join", "\"channel\":\"\(String(repeating: "c", count: 129))\"", .invalidArgument),
        op("join channelType number", "join", "\"channel\":\"\(channel)\",\"channelType\":1", .invalidRequest),
        op("join channelType unknown", "join", "\"channel\":\"\(channel)\",\"channelType\":\"radio\"", .invalidArgument),
        op("join channelType null is the default", "join", "\"channel\":\"\(channel)\",\"channelType\":null", nil),
        op("join presence string", "join", "\"channel\":\"\(channel)\",\"presence\":\"yes\"", .invalidRequest),
        op("join messages number", "join", "\"channel\":\"\(channel)\",\"messages\":1", .invalidRequest),
        op("join state array", "join", "\"channel\":\"\(channel)\",\"state\":[]", .invalidRequest),
        op("join state value number", "join", "\"channel\":\"\(channel)\",\"state\":{\"k\":1}", .invalidRequest),
        op("join state value null", "join", "\"channel\":\"\(channel)\",\"state\":{\"k\":null}", .invalidRequest),
        op("join state with 1000 keys", "join", "\"channel\":\"\(channel)\",\"state\":\(manyKeys(1000))", .tooManyKeys),
        op("setState with 1000 keys", "setState", "\"channel\":\"\(channel)\",\"state\":\(manyKeys(1000))", .tooManyKeys),
        op("setState value over maxValueBytes", "setState", "\"channel\":\"\(channel)\",\"state\":{\"k\":\"\(String(repeating: "v", count: 8193))\"}", .valueTooLong),
        op("setState over maxTotalBytes", "setState", "\"channel\":\"\(channel)\",\"state\":\(manyKeys(5, value: String(repeating: "v", count: 8000)))", .stateTooLarge),
        op("setState key over maxKeyBytes", "setState", "\"channel\":\"\(channel)\",\"state\":{\"\(String(repeating: "k", count: 65))\":\"v\"}", .keyTooLong),
        op("setState empty key", "setState", "\"channel\":\"\(channel)\",\"state\":{\"\":\"v\"}", .invalidArgument),
        op("setState state string", "setState", "\"channel\":\"\(channel)\",\"state\":\"x\"", .invalidRequest),
        op("setState state null", "setState", "\"channel\":\"\(channel)\",\"state\":null", .invalidRequest),
        op("setState nested value", "setState", "\"channel\":\"\(channel)\",\"state\":{\"k\":{\"deep\":\"v\"}}", .invalidRequest),
        op("removeState keys string", "removeState", "\"channel\":\"\(channel)\",\"keys\":\"row\"", .invalidRequest),
        op("removeState keys of numbers", "removeState", "\"channel\":\"\(channel)\",\"keys\":[1]", .invalidRequest),
        op("removeState keys missing", "removeState", "\"channel\":\"\(channel)\"", .invalidRequest),
        op("getState userId array", "getState", "\"channel\":\"\(channel)\",\"userId\":[]", .invalidRequest),
        op("getState userId with a control character", "getState", "\"channel\":\"\(channel)\",\"userId\":\"\\u0001\"", .invalidArgument),
        op("getOnlineUsers pageSize string", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":\"10\"", .invalidRequest),
        op("getOnlineUsers pageSize 0", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":0", .invalidArgument),
        op("getOnlineUsers pageSize 1.5", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":1.5", .invalidArgument),
        op("getOnlineUsers pageSize 1001", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":1001", .invalidArgument),
        op("getOnlineUsers pageSize -1", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":-1", .invalidArgument),
        op("getOnlineUsers pageSize 1e400", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":1e400", .invalidArgument),
        op("getOnlineUsers pageSize with 400 digits", "getOnlineUsers", "\"channel\":\"\(channel)\",\"pageSize\":\(bigInteger)", .invalidArgument),
        op("getOnlineUsers page number", "getOnlineUsers", "\"channel\":\"\(channel)\",\"page\":5", .invalidRequest),
        op("getOnlineUsers forged page", "getOnlineUsers", "\"channel\":\"\(channel)\",\"page\":\"not-a-cursor\"", .invalidArgument),
        op("getOnlineUsers includeState without includeUserId", "getOnlineUsers", "\"channel\":\"\(channel)\",\"includeState\":true,\"includeUserId\":false", .invalidArgument),
        op("getOnlineUsers includeUserId string", "getOnlineUsers", "\"channel\":\"\(channel)\",\"includeUserId\":\"no\"", .invalidRequest),
        op("getUserChannels userId number", "getUserChannels", "\"userId\":5", .invalidRequest),
        op("publish without message", "publish", "\"channel\":\"\(channel)\"", .invalidRequest),
        op("publish message over maxMessageBytes", "publish", "\"channel\":\"\(channel)\",\"message\":\"\(String(repeating: "m", count: 33_000))\"", .messageTooLarge),
        op("publish channel number", "publish", "\"channel\":5,\"message\":1", .invalidRequest),
        op("publish to a stream channel without joining", "publish", "\"channel\":\"\(channel)\",\"channelType\":\"stream\",\"message\":1", .notInChannel),
        op("publish message 1e400", "publish", "\"channel\":\"\(channel)\",\"message\":1e400", nil),
        op("leave a channel not joined", "leave", "\"channel\":\"elsewhere\"", .notInChannel),
    ]

    static let userStatus: [HostileRow] = [
        op("setCustomStatus without customStatus", "setCustomStatus", "", .invalidRequest),
        op("setCustomStatus number", "setCustomStatus", "\"customStatus\":5", .invalidRequest),
        op("setCustomStatus 65 bytes", "setCustomStatus", "\"customStatus\":\"\(String(repeating: "s", count: 65))\"", .customStatusTooLong),
        op("getUserStatus userIds string", "getUserStatus", "\"userIds\":\"neighbour\"", .invalidRequest),
        op("getUserStatus userIds null", "getUserStatus", "\"userIds\":null", .invalidRequest),
        op("getUserStatus userIds of numbers", "getUserStatus", "\"userIds\":[1]", .invalidRequest),
        op("getUserStatus 501 userIds", "getUserStatus", "\"userIds\":\(userIds(501))", .tooManyUsers),
        custom("getUserStatus with invalid ids lists them in failed") { probe in
            let reply = try probe.expectReply(
                to: Array("{\"id\":\"r\",\"op\":\"getUserStatus\",\"userIds\":[\"\",\"a\\u0000\",\"\(String(repeating: "x", count: 129))\",\"neighbour\"]}".utf8),
                id: "r", code: nil)
            let failed = reply["failed"]?.arrayValue ?? []
            #expect(failed.count == 3 && failed.allSatisfy { $0["code"]?.stringValue == "INVALID_ARGUMENT" }, "\(reply)")
            #expect(reply["statuses"]?.arrayValue?.count == 1, "\(reply)")
        },
        op("subscribeUserStatus duration string", "subscribeUserStatus", "\"userIds\":[\"neighbour\"],\"duration\":\"60\"", .invalidRequest),
        op("subscribeUserStatus duration 59", "subscribeUserStatus", "\"userIds\":[\"neighbour\"],\"duration\":59", .invalidArgument),
        op("subscribeUserStatus duration 1e400", "subscribeUserStatus", "\"userIds\":[\"neighbour\"],\"duration\":1e400", .invalidArgument),
        op("subscribeUserStatus 101 userIds", "subscribeUserStatus", "\"userIds\":\(userIds(101))", .tooManyUsers),
        op("unsubscribeUserStatus userIds number", "unsubscribeUserStatus", "\"userIds\":5", .invalidRequest),
        op("getSubscriptions pageSize 201", "getSubscriptions", "\"pageSize\":201", .invalidArgument),
        op("getSubscriptions page number", "getSubscriptions", "\"page\":7", .invalidRequest),
    ]

    static let transport: [HostileRow] = [
        close("binary frame", 1003) { $0.sendBinary(Array("{\"id\":\"r\",\"op\":\"ping\"}".utf8)) },
        raw("fragmented binary frame") { socket in
            try socket.sendFrame(Array("{\"id\":\"r\",".utf8), opcode: 0x2, fin: false)
            try? socket.sendFrame(Array("\"op\":\"ping\"}".utf8), opcode: 0x0, fin: true) // may meet a closed socket
            return 1003
        },
        close("invalid UTF-8 (C3 28)", 1007) { $0.sendRawText(wrap([0xC3, 0x28])) },
        close("UTF-8-encoded surrogate (ED A0 80)", 1007) { $0.sendRawText(wrap([0xED, 0xA0, 0x80])) },
        close("overlong encoding (C0 AF)", 1007) { $0.sendRawText(wrap([0xC0, 0xAF])) },
        close("byte FF", 1007) { $0.sendRawText(wrap([0xFF])) },
        close("code point above U+10FFFF (F4 90 80 80)", 1007) { $0.sendRawText(wrap([0xF4, 0x90, 0x80, 0x80])) },
        close("truncated sequence at the end", 1007) { $0.sendRawText(Array("{\"id\":\"r\",\"op\":\"ping\"}".utf8) + [0xE2, 0x82]) },
        close("invalid UTF-8 across fragments", 1007) { $0.sendFragmented(wrap([0xE2, 0x82, 0xC0, 0xAF]), fragmentSize: 7) },
        raw("one frame over maxFrameBytes") { socket in
            try? socket.sendFrame(paddedPing(total: defaultFrameLimit + 1)) // the broker may close mid-frame
            return 1009
        },
        raw("fragments adding up to over maxFrameBytes") { socket in
            let message = paddedPing(total: defaultFrameLimit + 1)
            for start in stride(from: 0, to: message.count, by: 2048) {
                let end = min(message.count, start + 2048)
                do {
                    try socket.sendFrame(Array(message[start..<end]), opcode: start == 0 ? 0x1 : 0x0, fin: end == message.count)
                } catch { break } // closed mid-message: expected
            }
            return 1009
        },
        close("binary frame of two bytes", 1003) {
            $0.sendBinary([0x00, 0xFF])
        },
        custom("fragmented request in 3-byte pieces") { probe in
            try probe.expectReply(to: [], id: "r", code: nil) { $0.sendFragmented(Array("{\"id\":\"r\",\"op\":\"ping\"}".utf8), fragmentSize: 3) }
        },
        custom("fragmented request of exactly maxFrameBytes") { probe in
            try probe.expectReply(to: [], id: "r", code: nil) { $0.sendFragmented(paddedPing(total: defaultFrameLimit), fragmentSize: 4096) }
        },
    ]

    static let floods: [HostileRow] = [
        custom("1000 pipelined requests: RATE_LIMITED, then usable") { probe in
            let connection = probe.connection
            let ids = (0..<1000).map { connection.send("ping", id: .int($0)) }
            let replies = try ids.map { try connection.waitForReply(id: $0, timeout: .seconds(20)) }
            let served = replies.filter(\.ok).count
            let limited = replies.filter { $0.errorCode == .rateLimited }
            #expect(served + limited.count == 1000, "only ok or RATE_LIMITED")
            #expect(served >= 150 && served < 1000, "\(served) served")
            #expect(limited.allSatisfy { ($0.retryAfterMs ?? 0) > 0 })
            let wait = limited.map { $0.retryAfterMs ?? 0 }.min() ?? 0
            Thread.sleep(forTimeInterval: Double(wait) / 1000 + 0.05) // the advertised retry delay
            #expect(try connection.request("ping").ok, "usable after the flood")
        },
        custom("1000 invalid JSON frames: INVALID_JSON then RATE_LIMITED, then usable") { probe in
            let connection = probe.connection
            for index in 0..<1000 { connection.sendRawText("{\"id\":\(index),oops") }
            var codes: [ErrorCode: Int] = [:]
            for _ in 0..<1000 {
                let reply = try connection.nextUnmatchedReply(timeout: .seconds(20))
                #expect(reply.id == .null)
                codes[reply.errorCode ?? .internal, default: 0] += 1
            }
            #expect((codes[.invalidJSON] ?? 0) >= 150, "\(codes)")
            #expect((codes[.rateLimited] ?? 0) > 0, "\(codes)")
            #expect(codes.keys.allSatisfy { $0 == .invalidJSON || $0 == .rateLimited }, "\(codes)")
            // Once the bucket refills a ping is answered; a second ping right behind it may
            // find the bucket empty again, so the check is the first success, not a second call.
            #expect(eventually(timeout: 10) { (try? connection.request("ping").ok) == true }, "usable after the flood")
        },
        custom("150 pipelined state changes: the neighbour follows every one") { probe in
            let connection = probe.connection
            let ids = (0..<150).map { connection.send("setState", ["channel": .string(channel), "state": ["step": .string("\($0)")]]) }
            let replies = try ids.map { try connection.waitForReply(id: $0, timeout: .seconds(20)) }
            #expect(replies.allSatisfy { $0.ok }, "\(replies.first { !$0.ok }.map(\.description) ?? "")")
        },
        custom("150 pipelined leave/join pairs: the neighbour follows every one") { probe in
            let connection = probe.connection
            var ids: [JSON] = []
            for step in 0..<75 {
                ids.append(connection.send("leave", ["channel": .string(channel)]))
                ids.append(connection.send("join", ["channel": .string(channel), "presence": false, "state": ["step": .string("\(step)")]]))
            }
            let replies = try ids.map { try connection.waitForReply(id: $0, timeout: .seconds(20)) }
            #expect(replies.allSatisfy { $0.ok }, "\(replies.first { !$0.ok }.map(\.description) ?? "")")
        },
    ]
}
