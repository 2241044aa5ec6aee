import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §5 (1.1) through the real binary: `message` events for a held session are kept
/// and delivered after the snapshots of its resume; `messagesDropped` counts what did not fit.
@Suite("Held messages", .serialized)
struct HeldMessageTests {
    /// alice joins `lobby`, drops without a close frame and is held; bob publishes `texts`.
    private func heldWithMessages(_ broker: BrokerProcess, _ texts: [String]) throws -> String {
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        let first = try broker.connect()
        let login = try first.login(userId: "alice", platform: "web")
        let token = try #require(login["resumeToken"]?.stringValue)
        #expect(try first.join("lobby").ok)
        first.drop()
        #expect(try first.waitForClose(timeout: presenceDeadline).dropped)
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 })
        for text in texts {
            let reply = try bob.channelOp("publish", "lobby", ["message": .string(text)])
            #expect(reply["recipients"]?.numberValue?.intValue == 0, "a held session is not counted")
        }
        return token
    }

    @Test("the resume delivers the messages sent during the hold, in order, after the snapshot")
    func replayedAfterResume() throws {
        let broker = try BrokerProcess(config: ["presence": ["timeoutSeconds": 60]])
        let token = try heldWithMessages(broker, ["one", "two", "three"])
        let second = try broker.connect()
        let resumed = try second.login(userId: "alice", platform: "web", resumeToken: token)
        #expect(resumed["resumed"]?.boolValue == true)
        #expect(resumed["messagesDropped"]?.numberValue?.intValue == 0)
        var order: [String] = []
        while order.count < 4 {
            let event = try second.nextEvent(timeout: .seconds(5))
            order.append(event.name == "presence" ? "snapshot" : event["message"]?.stringValue ?? "?")
        }
        #expect(order == ["snapshot", "one", "two", "three"])
    }

    @Test("past limits.heldMessageBytes later messages are dropped and counted")
    func droppedBeyondTheLimit() throws {
        let broker = try BrokerProcess(config: ["presence": ["timeoutSeconds": 60], "limits": ["heldMessageBytes": 250]])
        let texts = (1...6).map { "message number \($0)" }
        let token = try heldWithMessages(broker, texts)
        let second = try broker.connect()
        let resumed = try second.login(userId: "alice", platform: "web", resumeToken: token)
        let dropped = try #require(resumed["messagesDropped"]?.numberValue?.intValue)
        #expect(dropped > 0 && dropped < 6)
        _ = try second.presenceEvent("snapshot", channel: "lobby")
        var kept: [String] = []
        for _ in 0..<(6 - dropped) {
            kept.append(try second.nextEvent(timeout: .seconds(5))["message"]?.stringValue ?? "?")
        }
        #expect(kept == Array(texts.prefix(6 - dropped)), "the oldest stay")
    }
}
