import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `rollcall-cli token` against a `jwt`-mode broker, and the UNAUTHORIZED → 4401 path.
@Suite("rollcall-cli token and jwt logins")
struct TokenCLITests {
    static let secret = "integration-secret-0123456789abcdef-0123456789"
    static let variable = "ROLLCALL_TEST_TOKEN_SECRET"

    /// Runs `rollcall-cli` with `environment` added (through `env`, not this process's environment).
    func cli(_ arguments: [String], environment: [String] = []) throws -> (status: Int32, stdout: String, stderr: String) {
        try ExternalCommand.run("/usr/bin/env", environment + [CLITests.cliBinary] + arguments)
    }

    func jwtBroker() throws -> BrokerProcess {
        try BrokerProcess(config: ["auth": ["mode": "jwt", "secret": Self.secret]])
    }

    func mint(_ extra: [String]) throws -> String {
        let result = try cli(["token", "--secret-env", Self.variable] + extra, environment: ["\(Self.variable)=\(Self.secret)"])
        #expect(result.status == 0, "\(result.stderr)")
        let token = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.split(separator: ".").count == 3, "a compact JWS: \(token)")
        return token
    }

    @Test("a minted token with --channels 'room:*' logs in; lobby is FORBIDDEN, room:1 is allowed")
    func mintedTokenGrants() throws {
        let broker = try jwtBroker()
        let token = try mint(["--user", "alice", "--channels", "room:*", "--ttl", "600"])
        let alice = try broker.connect()
        let login = try alice.login(userId: "alice", platform: "cli", token: token)
        #expect(login.ok, "\(login)")
        let lobby = try alice.request("join", ["channel": "lobby"])
        #expect(lobby.errorCodeText == "FORBIDDEN")
        #expect(try alice.request("join", ["channel": "room:1"]).ok)
        #expect(try alice.request("publish", ["channel": "lobby", "message": "hi"]).errorCodeText == "FORBIDDEN")

        // The same through the CLI itself: --token, and the error reply exits 1 naming the code.
        let viaCLI = try cli(["--url", broker.url(), "--user", "alice", "--token", token, "raw", "join", "{\"channel\":\"lobby\"}"])
        #expect(viaCLI.status == 1)
        #expect(viaCLI.stdout.contains("FORBIDDEN"))
        let allowed = try cli(["--url", broker.url(), "--user", "alice", "--token", token, "raw", "join", "{\"channel\":\"room:2\"}"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    @Test("a token without --channels grants every channel; it logs in only as its --user")
    func unrestrictedToken() throws {
        let broker = try jwtBroker()
        let token = try mint(["--user", "bob"])
        let bob = try broker.connect()
        #expect(try bob.login(userId: "bob", token: token).ok)
        #expect(try bob.request("join", ["channel": "lobby"]).ok)
        let mallory = try broker.connect()
        #expect(try mallory.login(userId: "mallory", token: token).errorCodeText == "UNAUTHORIZED")
    }

    @Test("token refuses an empty or unset secret variable")
    func refusesEmptySecret() throws {
        let empty = try cli(["token", "--secret-env", Self.variable, "--user", "alice"], environment: ["\(Self.variable)="])
        #expect(empty.status == 1)
        #expect(empty.stderr.contains(Self.variable))
        #expect(empty.stdout.isEmpty, "no token printed")
        let unset = try cli(["token", "--secret-env", Self.variable, "--user", "alice"], environment: ["-u", Self.variable])
        #expect(unset.status == 1)
        #expect(unset.stderr.contains(Self.variable))
        let badTTL = try cli(["token", "--secret-env", Self.variable, "--user", "alice", "--ttl", "0"],
                             environment: ["\(Self.variable)=\(Self.secret)"])
        #expect(badTTL.status != 0)
    }

    @Test("a bad token gets UNAUTHORIZED, then close 4401 on the wire; neighbours are unaffected")
    func badTokenCloses4401() throws {
        let broker = try jwtBroker()
        let good = try broker.connect()
        #expect(try good.login(userId: "carol", token: try mint(["--user", "carol"])).ok)

        // A token signed with another secret.
        let forged = try cli(["token", "--secret-env", Self.variable, "--user", "eve"],
                             environment: ["\(Self.variable)=not-the-broker-secret-0123456789abcdef"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let raw = try SilentWebSocket(port: broker.port)
        try raw.sendText("{\"id\":1,\"op\":\"login\",\"userId\":\"eve\",\"token\":\"\(forged)\"}")
        let result = raw.readUntilClosed(timeout: 10)
        let reply = try #require(result.texts.first.flatMap { try? JSONParser.parse($0).objectValue }, "\(result.texts)")
        #expect(Reply(reply).errorCodeText == "UNAUTHORIZED")
        #expect(result.closeCode == 4401, "close frame code \(String(describing: result.closeCode))")
        #expect(result.closed)

        // The client library sees the refusal and the close too.
        let client = try broker.connect()
        #expect(try client.login(userId: "eve", token: "not.a.token").errorCodeText == "UNAUTHORIZED")
        let close = try client.waitForClose(timeout: .seconds(5))
        #expect(close.closedByServer)
        // lws 4.1.6 clients report close codes above 1011 as 1002, keeping the reason.
        #expect(close.code == 4401 || close.code == 1002, "\(close)")
        #expect(try good.request("ping").ok)
    }

    @Test("token mints users, info and a short ttl; refresh swaps the token on the connection, exit 1 with the error when refused")
    func mintedClaimsAndRefresh() throws {
        let broker = try jwtBroker()
        let token = try mint(["--user", "alice", "--users", "team:*", "bob", "--info", #"{"name":"Alice","role":"admin"}"#, "--ttl", "5"])
        let alice = try broker.connect()
        let login = try alice.login(userId: "alice", token: token)
        #expect(login.ok, "\(login)")
        let expiresAt = try #require(login["expiresAt"]?.numberValue?.intValue)
        let now = Int(Date().timeIntervalSince1970 * 1000)
        #expect(expiresAt > now && expiresAt <= now + 5_000, "a 5 s token")
        #expect(try alice.request("getUserStatus", ["userIds": ["bob"]]).failures.isEmpty)
        #expect(try alice.request("getUserStatus", ["userIds": ["carol"]]).failures == ["carol": "FORBIDDEN"])
        #expect(try alice.join("lobby").ok)

        let fresh = try mint(["--user", "alice", "--ttl", "600"])
        let refreshed = try cli(["--url", broker.url(), "--user", "alice", "--token", token, "refresh", fresh])
        #expect(refreshed.status == 0, "\(refreshed.stderr)")
        #expect(refreshed.stdout.contains("refreshed"), "\(refreshed.stdout)")
        let json = try cli(["--url", broker.url(), "--user", "alice", "--token", token, "--json", "refresh", fresh])
        let reply = try JSONParser.parse(Array(json.stdout.utf8))
        #expect(reply["result"]?["expiresAt"]?.numberValue?.intValue ?? 0 > now + 500_000, "\(json.stdout)")

        let refused = try cli(["--url", broker.url(), "--user", "alice", "--token", token, "refresh", try mint(["--user", "mallory"])])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("UNAUTHORIZED") || refused.stdout.contains("UNAUTHORIZED"), "\(refused)")

        let badInfo = try cli(["token", "--secret-env", Self.variable, "--user", "alice", "--info", "[1]"],
                              environment: ["\(Self.variable)=\(Self.secret)"])
        #expect(badInfo.status != 0)
        #expect(badInfo.stdout.isEmpty, "no token printed")
    }
}
