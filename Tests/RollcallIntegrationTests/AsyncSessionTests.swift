import Foundation
@_spi(Testing) import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// The async API (`RollcallSession`) end to end against the real binary.
@Suite("Async session", .serialized)
struct AsyncSessionTests {
    private let lobby = ChannelRef("lobby")

    /// Churn by several blocking clients, then: the async session's roster equals `getOnlineUsers`.
    private func rosterMatchesListingAfterChurn(config: [String: Any]) async throws {
        let broker = try asyncBroker(config)
        let watcher = RollcallSession(url: broker.url())
        try await watcher.connect()
        let login = try await watcher.login(userId: "watcher")
        #expect(login.userId == "watcher" && !login.resumed)
        let joined = try await watcher.join(lobby, messages: false)
        #expect(joined.occupancy == 1)
        var others: [RollcallConnection] = []
        for n in 0..<8 {
            let other = try broker.session("user\(n)")
            #expect(try other.join("lobby", state: ["n": "\(n)"]).ok)
            others.append(other)
        }
        for n in [1, 4, 6] { #expect(try others[n].channelOp("leave", "lobby").ok) }
        #expect(try others[2].channelOp("setState", "lobby", ["state": ["n": "two"]]).ok)
        let listed = await eventuallyAsync {
            guard let page = try? await watcher.send(Requests.GetOnlineUsers(self.lobby)),
                  let roster = watcher.roster(of: self.lobby) else { return false }
            // In interval mode a page is the roster as of the last event: wait for the event
            // that carries the last change too (docs/protocol.md, getOnlineUsers).
            return roster.sortedMembers.map(\.userId) == page.userIds
                && roster.sortedMembers.map(\.state) == page.users.map(\.state)
                && roster.members["user2"]?.state == ["n": "two"]
        }
        #expect(listed)
        #expect(watcher.roster(of: lobby)?.members["user2"]?.state == ["n": "two"])
        #expect(watcher.roster(of: lobby)?.isStale == false)
        watcher.close()
    }

    @Test("login, join and a roster that equals getOnlineUsers after churn (announce mode)")
    func rosterInAnnounceMode() async throws {
        try await rosterMatchesListingAfterChurn(config: [:])
    }

    @Test("the same in interval mode (maxInstantEvents 3, intervalSeconds 0.2)")
    func rosterInIntervalMode() async throws {
        try await rosterMatchesListingAfterChurn(config: ["presence": ["maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2]])
    }

    @Test("join returns with the roster built: the snapshot after the reply is applied first (large states, separate frames)")
    func joinReturnsWithTheRoster() async throws {
        let broker = try asyncBroker()
        let note = String(repeating: "x", count: 900)
        var members: [RollcallConnection] = []
        for n in 0..<40 {
            let member = try broker.session("m\(n)")
            #expect(try member.join("lobby", state: ["note": note]).ok)
            members.append(member)
        }
        let session = RollcallSession(url: broker.url())
        try await session.connect()
        try await session.login(userId: "watcher")
        let joined = try await session.join(lobby, messages: false)
        #expect(joined.occupancy == 41)
        let roster = try #require(session.roster(of: lobby))
        #expect(roster.members.count == 41)
        #expect(roster.members["m39"]?.state["note"] == note)
        session.close()
    }

    @Test("an error reply is a typed error with the protocol code")
    func typedErrors() async throws {
        let broker = try asyncBroker()
        let session = RollcallSession(url: broker.url())
        try await session.connect()
        try await session.login(userId: "alice")
        do {
            _ = try await session.send(Requests.GetState(lobby, userId: "nobody"))
            Issue.record("getState of a user not present succeeded")
        } catch {
            guard case .server(let code, let text, _, let retry) = error else { Issue.record("\(error)"); return }
            #expect(code == .userNotPresent && text == "USER_NOT_PRESENT" && retry == nil)
            #expect(error.code == "USER_NOT_PRESENT")
        }
        let pong = try await session.send(Requests.Ping())
        #expect(pong.serverTime > 0)
        session.close()
    }

    @Test("refresh(token:): the new expiresAt; a refused token throws UNAUTHORIZED; a reconnect logs in with the refreshed token")
    func refreshAndReconnect() async throws {
        let secret = "async-session-secret-0123456789abcdef"
        let broker = try asyncBroker(["auth": ["mode": "jwt", "secret": secret], "presence": ["timeoutSeconds": 30]])
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let first = JWTMinter.mint(secret: secret, userId: "alice", ttlSeconds: 600, now: now)
        let second = JWTMinter.mint(secret: secret, userId: "alice", ttlSeconds: 1200, now: now)
        let secondExpiry = Int((now / 1000 + 1200) * 1000)
        let alice = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5))
        try await alice.connect()
        let login = try await alice.login(userId: "alice", token: first)
        #expect(login.expiresAt == Int((now / 1000 + 600) * 1000))
        do {
            try await alice.refresh(token: JWTMinter.mint(secret: secret, userId: "mallory", ttlSeconds: 600, now: now))
            Issue.record("a token of another user was accepted")
        } catch {
            #expect(error.code == "UNAUTHORIZED")
        }
        #expect(try await alice.refresh(token: second) == secondExpiry)
        #expect(alice.lastLogin?.expiresAt == secondExpiry)
        try await alice.join(lobby)

        alice.dropConnection()
        #expect(await eventuallyAsync { alice.state == .online && alice.lastLogin?.resumed == true })
        #expect(alice.lastLogin?.expiresAt == secondExpiry, "the reconnect logged in with the refreshed token")
        alice.close()
    }

    @Test("tokenProvider: called on refreshRequired (the session refreshes by itself) and before a reconnect's login")
    func tokenProviderRefreshes() async throws {
        let secret = "async-session-secret-0123456789abcdef"
        let broker = try asyncBroker(["auth": ["mode": "jwt", "secret": secret, "refreshNoticeSeconds": 60],
                                      "presence": ["timeoutSeconds": 30]])
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let calls = CallCounter()
        let alice = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5))
        alice.tokenProvider = {
            let call = calls.increment()
            return JWTMinter.mint(secret: secret, userId: "alice", ttlSeconds: 600 + call, now: now)
        }
        try await alice.connect()
        // A 30 s token: under the 60 s notice, so refreshRequired comes at once and the session refreshes.
        try await alice.login(userId: "alice", token: JWTMinter.mint(secret: secret, userId: "alice", ttlSeconds: 30, now: now))
        let refreshedExpiry = Int((now / 1000 + 601) * 1000)
        #expect(await eventuallyAsync { alice.lastLogin?.expiresAt == refreshedExpiry })
        #expect(calls.value == 1)

        alice.dropConnection()
        #expect(await eventuallyAsync { alice.state == .online && alice.lastLogin?.resumed == true })
        #expect(calls.value == 2, "a fresh token for the reconnect")
        #expect(alice.lastLogin?.expiresAt == Int((now / 1000 + 602) * 1000))
        alice.close()
    }

    @Test("a cut connection reconnects and resumes silently: others see no leave, the roster comes back")
    func reconnectAndResume() async throws {
        let broker = try asyncBroker(["presence": ["timeoutSeconds": 30]])
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let alice = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5))
        let log = StateLog(alice)
        try await alice.connect()
        try await alice.login(userId: "alice")
        try await alice.join(lobby)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")
        #expect(await eventuallyAsync { alice.roster(of: self.lobby)?.count == 2 })

        alice.dropConnection()
        #expect(await eventuallyAsync { log.states.contains(.reconnecting(attempt: 0)) })
        #expect(await eventuallyAsync { log.states.last == .online && alice.state == .online })
        #expect(alice.lastLogin?.resumed == true)
        #expect(alice.lastLogin?.channels == [lobby])
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "resumed without leave or timeout")
        let members = await eventuallyAsync { alice.roster(of: self.lobby)?.sortedMembers.map(\.userId) == ["alice", "bob"] }
        #expect(members)
        // Still a member: a publish reaches bob.
        let published = try await alice.send(Requests.Publish(lobby, message: "back"))
        #expect(published.recipients == 1)
        alice.close()
    }

    @Test("a close that ended the session on purpose is final: 4409 (a login over maxSessionsPerUser) and 4403 (disconnectUser) do not reconnect")
    func finalClosesDoNotReconnect() async throws {
        let broker = try asyncBroker(BrokerProcess.merge(ServerAPIRequest.config, ["limits": ["maxSessionsPerUser": 1]]))
        let first = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2))
        let firstLog = StateLog(first)
        try await first.connect()
        try await first.login(userId: "alice")
        // Another device logs in: the oldest session is closed with 4409. Reconnecting would
        // close the newer one in turn, and so on.
        let other = try broker.session("alice")
        #expect(await eventuallyAsync { first.state == .closed }, "\(firstLog.states)")
        #expect(!firstLog.states.contains(.reconnecting(attempt: 0)), "\(firstLog.states)")
        #expect(try other.request("ping").ok, "the newer session stays")
        #expect(try broker.metric("rollcall_logins_total") == 2, "no third login")

        let second = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2))
        let secondLog = StateLog(second)
        try await second.connect()
        try await second.login(userId: "bob")
        #expect(try ServerAPIRequest.ok(port: broker.port, "disconnectUser", ["userId": "bob"]) == ["sessions": 1])
        #expect(await eventuallyAsync { second.state == .closed }, "\(secondLog.states)")
        #expect(!secondLog.states.contains(.reconnecting(attempt: 0)), "\(secondLog.states)")
        #expect(try broker.metric("rollcall_logins_total") == 3, "bob did not log in again")
    }

    @Test("several URLs (3-node cluster): after kill -9 of its node the session resumes on the next one within its resume window; logins that did not resume yet are logged out again; nobody sees leave or join")
    func severalURLsResumeOnTheNextNode() async throws {
        // heartbeatSeconds 1: another node gives up a live session 2.5 s after its node's last
        // beat, so the first reconnects come too early to resume and must not be kept.
        let cluster = try ClusterProcess(config: [
            "presence": ["timeoutSeconds": 60], "cluster": ["heartbeatSeconds": 1, "nodeTimeoutSeconds": 3],
            "limits": ["loginTimeoutSeconds": 120],
        ])
        let bob = try cluster.session("bob", node: 0)
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let alice = RollcallSession(urls: [cluster.nodeURL(2), cluster.nodeURL(1)],
                                    reconnect: ReconnectPolicy(initialDelay: 0.1, maxDelay: 0.8))
        #expect(alice.resumeWindow == 5, "the default with several URLs")
        let log = StateLog(alice)
        try await alice.connect()
        let login = try await alice.login(userId: "alice")
        try await alice.join(lobby)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")

        cluster.kill(node: 2, signal: SIGKILL)
        #expect(await eventuallyAsync(timeout: 20) { alice.state == .online && alice.lastLogin?.resumed == true }, "\(log.states)")
        #expect(alice.lastLogin?.sessionId == login.sessionId)
        #expect(alice.url == cluster.nodeURL(1))
        #expect(await eventuallyAsync { log.states.contains(.reconnecting(attempt: 1)) }, "a login in the window that did not resume was not kept: \(log.states)")
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "no leave, timeout or join about alice")
        // The logins that did not resume were logged out again: n1 and n2 hold bob and alice only.
        #expect(try cluster.metric("rollcall_sessions{state=\"live\"}") == 2)
        #expect(try cluster.metric("rollcall_logins_total") ?? 0 >= 3, "bob, at least one login not kept, the resume")
        let members = await eventuallyAsync { alice.roster(of: self.lobby)?.sortedMembers.map(\.userId) == ["alice", "bob"] }
        #expect(members)
        alice.close()
    }

    @Test("while the broker is down the session backs off and keeps trying")
    func backoffWhileTheBrokerIsDown() async throws {
        let broker = try asyncBroker()
        let session = RollcallSession(url: broker.url(), reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2))
        let log = StateLog(session)
        try await session.connect()
        try await session.login(userId: "carol")
        broker.kill()
        #expect(await eventuallyAsync(timeout: 15) { log.states.contains(.reconnecting(attempt: 3)) })
        #expect(session.state != .online)
        session.close()
        #expect(session.state == .closed)
    }

    @Test("backoff delays grow, are capped and jittered")
    func backoffPolicy() {
        let policy = ReconnectPolicy(initialDelay: 0.1, maxDelay: 1, multiplier: 2)
        #expect(policy.ceiling(attempt: 0) == 0.1)
        #expect(policy.ceiling(attempt: 3) == 0.8)
        #expect(policy.ceiling(attempt: 30) == 1)
        #expect(policy.delay(attempt: 3, random: 0) == 0.4)
        #expect(policy.delay(attempt: 3, random: 1) == 0.8)
    }
}
