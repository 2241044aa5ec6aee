import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `rollcall-cli watch --url A,B` on a cluster (PROTOCOL §9, issue #12): when the node it is on
/// goes away, watch resumes its session on the next URL without anyone seeing it leave or
/// join, and keeps showing the roster's changes.
@Suite("Cluster: rollcall-cli watch fails over to another node", .serialized)
struct ClusterWatchTests {
    @Test("SIGTERM on watch's node: it resumes on the next --url, silently, and shows later changes")
    func watchResumesAfterSIGTERM() throws {
        try failover { cluster in
            let exit = cluster.node(2).stop(timeout: 10)
            #expect(exit?.signaled == false && exit?.status == 0, "\(String(describing: exit))")
        }
    }

    @Test("kill -9 of watch's node: it resumes on the next --url once the node stopped beating, silently")
    func watchResumesAfterKill() throws {
        try failover { cluster in cluster.kill(node: 2, signal: SIGKILL) }
    }

    @Test("Redis restarted empty (1012): watch logs in again and joins again instead of trying to resume, and shows later changes")
    func watchLogsInAgainAfterDataLoss() throws {
        let cluster = try ClusterProcess()
        let bob = try cluster.session("bob", node: 0)
        #expect(try bob.join("lobby").ok)
        let urls = [cluster.nodeURL(2), cluster.nodeURL(1)]
        let running = try CLITests().startCLI(["--url", urls.joined(separator: ","), "--user", "alice", "watch", "lobby"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2"), "\(running.output.stdoutText)\n\(running.output.stderrText)")

        try cluster.redis.restart()
        _ = try bob.waitForClose(timeout: .seconds(15))
        #expect(running.waitForOutput("logged in again to \(urls[0]): the cluster lost its data"),
                "\(running.output.stdoutText)\n\(running.output.stderrText)")
        #expect(!running.output.stdoutText.contains("reconnected to"), "no resume was tried: \(running.output.stdoutText)")
        // The cluster starts empty: alice's new session is the channel's only member.
        #expect(running.waitForOutput("snapshot: 1 member(s)"), "\(running.output.stdoutText)")

        #expect(cluster.waitUntilFormed(timeout: 10), "\(cluster.describeNodes())")
        let carol = try cluster.session("carol", node: 0)
        #expect(try carol.join("lobby").ok)
        #expect(running.waitForOutput("join carol"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2"), "\(running.output.stdoutText)")
        running.child.send(SIGINT)
        #expect(running.child.waitForExit(timeout: 10) != nil, "watch exits on Ctrl-C")
    }

    /// watch (alice) on n3 with `--url n3,n2`, bob on n1; `stopNode` takes n3 away; then watch
    /// must have resumed on n2, bob must have seen nothing about alice, and carol's join and
    /// bob's state change afterwards must reach watch's output.
    private func failover(stopNode: (ClusterProcess) throws -> Void) throws {
        let cluster = try ClusterProcess(config: ["presence": ["timeoutSeconds": 30]])
        let bob = try cluster.session("bob", node: 0)
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let urls = [cluster.nodeURL(2), cluster.nodeURL(1)]
        let running = try CLITests().startCLI(["--url", urls.joined(separator: ","), "--user", "alice", "watch", "lobby", "--state"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2"), "\(running.output.stdoutText)\n\(running.output.stderrText)")

        try stopNode(cluster)
        #expect(running.waitForOutput("reconnected to \(urls[1]): resumed true"),
                "\(running.output.stdoutText)\n\(running.output.stderrText)")
        // The resume ends with a snapshot of what Redis holds: alice and bob.
        #expect(running.waitForOutput("snapshot: 2 member(s)"), "\(running.output.stdoutText)")
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "bob sees no leave, timeout or join of alice")

        let carol = try cluster.session("carol", node: 0)
        #expect(try carol.join("lobby", state: ["seat": "3"]).ok)
        #expect(try bob.channelOp("setState", "lobby", ["state": ["mood": "glad"]]).ok)
        #expect(running.waitForOutput("join carol seat=3"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput("roster: 3 member(s), occupancy 3, mode announce, seq 4: alice ({}), bob (mood=glad), carol (seat=3)"),
                "\(running.output.stdoutText)")
        let seen = try bob.presenceEventsAfterBarrier().map { "\($0.type ?? "?") \($0["publisher"]?.stringValue ?? "?")" }
        #expect(seen.filter { !$0.hasSuffix(" bob") } == ["join carol"], "only carol's join, nothing about alice: \(seen)")

        running.child.send(SIGINT)
        #expect(running.child.waitForExit(timeout: 10) != nil, "watch exits on Ctrl-C")
        _ = try bob.presenceEvent("leave", channel: "lobby", publisher: "alice")
    }
}
