import Foundation
@_spi(Testing) import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// Token refresh and expiry (PROTOCOL §3, §5, 1.1) through the real binary, on one node and on
/// a cluster (alice, bob and carol on three nodes).
@Suite("Token lifetime", .serialized)
struct TokenLifetimeIntegrationTests {
    static let secret = "integration-test-secret-of-32-bytes!"

    /// jwt mode with no clock skew and a 5 s notice, so that a 3 s token is noticed at once
    /// and closed within 3 s.
    static let config: [String: Any] = ["auth": ["mode": "jwt", "secret": secret, "clockSkewSeconds": 0, "refreshNoticeSeconds": 5]]

    /// Wall time now, in ms.
    private var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private func token(_ user: String, ttl: Int, channels: [String]? = nil, at time: Int64? = nil) -> String {
        JWTMinter.mint(secret: Self.secret, userId: user, channels: channels, ttlSeconds: ttl, now: time ?? now)
    }

    /// The `exp` of `token`, in ms (what `expiresAt` must say).
    private func expiry(_ token: String) throws -> Int {
        let payload = String(token.split(separator: ".")[1])
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        let claims = try JSONParser.parse(Array(data))
        return try #require(claims["exp"]?.numberValue?.intValue) * 1000
    }

    /// `auth.secrets` (PROTOCOL §3, 1.2): during a rotation tokens of the old and the new secret
    /// both log in and refresh; another secret is refused with 4401.
    @Test("auth.secret and auth.secrets: tokens signed with either log in and refresh; another secret is refused")
    func rotatingSecrets() throws {
        let old = "the-old-secret-of-at-least-32-bytes!", new = "the-new-secret-of-at-least-32-bytes!"
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secret": new, "secrets": [old]]])
        let (alice, _) = try login(broker, "alice", token: JWTMinter.mint(secret: old, userId: "alice", ttlSeconds: 600, now: now))
        _ = try login(broker, "bob", token: JWTMinter.mint(secret: new, userId: "bob", ttlSeconds: 600, now: now))
        #expect(try alice.refresh(token: JWTMinter.mint(secret: new, userId: "alice", ttlSeconds: 900, now: now)).ok,
                "a session of the old secret moves to a token of the new one")
        let mallory = try broker.connect()
        let refused = try mallory.login(userId: "mallory", token: JWTMinter.mint(secret: "another-secret-of-at-least-32-bytes", userId: "mallory", ttlSeconds: 600, now: now))
        #expect(refused.errorCode == .unauthorized, "\(refused)")
        #expect(try mallory.waitForClose(timeout: .seconds(5)).code == 4401)
    }

    private func login(_ broker: any BrokerUnderTest, _ user: String, token: String) throws -> (RollcallConnection, Reply) {
        let connection = try broker.connect()
        let reply = try connection.login(userId: user, token: token)
        #expect(reply.ok, "\(reply)")
        return (connection, reply)
    }

    @Test("login expiresAt; refresh: a bad token is UNAUTHORIZED and keeps the connection, a good one moves expiresAt; a short token's notice comes at once",
          arguments: Topology.singleAndCluster)
    func refreshAndNotice(topology: Topology) throws {
        let broker = try topology.start(config: Self.config)
        let first = token("alice", ttl: 600)
        let (alice, login) = try self.login(broker, "alice", token: first)
        #expect(login["expiresAt"]?.numberValue?.intValue == (try expiry(first)))

        for bad in [token("mallory", ttl: 600), token("alice", ttl: -10), "x.y.z"] {
            let reply = try alice.refresh(token: bad)
            #expect(reply.errorCodeText == "UNAUTHORIZED", "\(reply)")
        }
        #expect(try alice.request("ping").ok, "the connection stays open after refused refreshes")
        let early = alice.drainEvents().filter { $0.name == "session" }
        #expect(early.isEmpty, "no notice for a 600 s token")

        let short = token("alice", ttl: 3)
        let refreshed = try alice.refresh(token: short)
        #expect(refreshed["expiresAt"]?.numberValue?.intValue == (try expiry(short)))
        let notice = try alice.waitForEvent(timeout: presenceDeadline) { $0.name == "session" }
        #expect(notice.type == "refreshRequired")
        #expect(notice["expiresAt"]?.numberValue?.intValue == (try expiry(short)))

        let long = token("alice", ttl: 600)
        #expect(try alice.refresh(token: long)["expiresAt"]?.numberValue?.intValue == (try expiry(long)))
        #expect(alice.isOpen)
    }

    @Test("an unrefreshed token closes 4401 token expired at exp: leave in every channel, offline; a refreshed session stays",
          arguments: Topology.singleAndCluster)
    func expiryEndsTheSession(topology: Topology) throws {
        let broker = try topology.start(config: Self.config)
        let minted = now
        let (alice, _) = try login(broker, "alice", token: token("alice", ttl: 3, at: minted))
        let (bob, _) = try login(broker, "bob", token: token("bob", ttl: 600))
        let (carol, _) = try login(broker, "carol", token: token("carol", ttl: 3, at: minted))
        for connection in [alice, bob, carol] {
            #expect(try connection.join("lobby").ok)
            #expect(try connection.join("room:1").ok)
        }
        #expect(try bob.subscribe(["carol"]).ok)
        _ = bob.drainEvents()
        // alice refreshes in time (on her notice, as a client should); carol does not.
        _ = try alice.waitForEvent(timeout: presenceDeadline) { $0.name == "session" && $0.type == "refreshRequired" }
        #expect(try alice.refresh(token: token("alice", ttl: 600)).ok)

        let closed = try carol.waitForClose(timeout: presenceDeadline)
        #expect(closed.code == 4401)
        #expect(closed.reason == "token expired")
        for channel in ["lobby", "room:1"] {
            #expect(try bob.presenceEvent("leave", channel: channel, publisher: "carol")["publisher"]?.stringValue == "carol")
        }
        #expect(try bob.waitForStatus(of: "carol") { $0["status"]?.stringValue == "offline" }["status"]?.stringValue == "offline")
        // alice outlived her first token's exp (carol's, minted at the same instant).
        #expect(try alice.request("ping").ok)
        let roster = try bob.channelOp("getOnlineUsers", "lobby")
        #expect((roster["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue } == ["alice", "bob"])
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_token_expiries_total")) == 1 })
        #expect(try broker.metric("rollcall_token_refreshes_total") == 1)
        let aboutAlice = bob.drainEvents().filter { $0.name == "presence" && $0["publisher"]?.stringValue == "alice" }
        #expect(aboutAlice.isEmpty, "nobody saw alice leave")
    }

    @Test("refresh in none mode is INVALID_REQUEST", arguments: Topology.singleAndCluster)
    func refreshInNoneMode(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        #expect(try alice.refresh(token: token("alice", ttl: 600)).errorCodeText == "INVALID_REQUEST")
        #expect(try alice.request("ping").ok)
    }

    @Test("cluster: sessions dropped on n1 resume on n2 with fresh tokens; their notice, refresh and expiry run on n2")
    func refreshAfterACrossNodeResume() throws {
        var config = Self.config
        config["presence"] = ["timeoutSeconds": 60]
        let cluster = try ClusterProcess(config: config)
        let bob = try cluster.connect(node: 2)
        #expect(try bob.login(userId: "bob", token: token("bob", ttl: 600)).ok)
        #expect(try bob.join("lobby").ok)
        var resumeTokens: [String: String] = [:]
        for user in ["alice", "dave"] {
            let first = try cluster.connect(node: 0)
            resumeTokens[user] = try #require(try first.login(userId: user, token: token(user, ttl: 600))["resumeToken"]?.stringValue)
            #expect(try first.join("lobby").ok)
            _ = try bob.presenceEvent("join", channel: "lobby", publisher: user)
            first.drop()
            #expect(try first.waitForClose(timeout: presenceDeadline).dropped)
        }
        #expect(eventually(timeout: 10) { (try? cluster.metric("rollcall_sessions{state=\"held\"}")) == 2 })
        let minted = now
        var resumed: [String: RollcallConnection] = [:]
        for user in ["alice", "dave"] {
            let second = try cluster.connect(node: 1)
            let short = token(user, ttl: 3, at: minted)
            let login = try second.login(userId: user, token: short, resumeToken: resumeTokens[user])
            #expect(login["resumed"]?.boolValue == true, "\(login)")
            #expect(login["expiresAt"]?.numberValue?.intValue == (try expiry(short)))
            let notice = try second.waitForEvent(timeout: presenceDeadline) { $0.name == "session" }
            #expect(notice["expiresAt"]?.numberValue?.intValue == (try expiry(short)))
            resumed[user] = second
        }
        let alice = try #require(resumed["alice"]), dave = try #require(resumed["dave"])
        #expect(try alice.refresh(token: token("mallory", ttl: 600)).errorCodeText == "UNAUTHORIZED")
        #expect(try alice.refresh(token: token("alice", ttl: 600)).ok)
        let closed = try dave.waitForClose(timeout: presenceDeadline)
        #expect(closed.code == 4401)
        #expect(closed.reason == "token expired")
        _ = try bob.presenceEvent("leave", channel: "lobby", publisher: "dave")
        #expect(try alice.request("ping").ok)
        let roster = try bob.channelOp("getOnlineUsers", "lobby")
        #expect((roster["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue } == ["alice", "bob"])
    }
}
