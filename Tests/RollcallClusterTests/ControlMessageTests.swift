@testable import RollcallCore
@testable import RollcallRedisEngine
import RollcallProtocol
import Testing

/// The cluster's control messages (``ControlMessage``): the text the nodes and the `claim`
/// script publish, read and written in one place.
@Suite("Control messages")
struct ControlMessageTests {
    private func read(_ text: String) -> ControlMessage? { ControlMessage(payload: Array(text.utf8)) }

    @Test func everyMessageReadsBackAsItWasWritten() {
        let messages: [ControlMessage] = [
            .adopted(sessionId: "n1.7", tokenHash: "9f86d081884c7d65"),
            .held(sessionId: "n1.10"),
            .end(sessionId: "n1.8", code: .sessionLimit, reason: nil),
            .end(sessionId: "n2.9", code: .disconnectedByServer, reason: "banned for spam, see you"),
            .end(sessionId: "n2.9", code: .disconnectedByServer, reason: ""),
        ]
        for message in messages { #expect(read(message.payload) == message, "\(message.payload)") }
    }

    @Test func theWireFormIsTheOneTheScriptsAndOlderNodesUse() {
        #expect(read("adopted n1.7 9f86d081884c7d65") == .adopted(sessionId: "n1.7", tokenHash: "9f86d081884c7d65"),
                "as SessionScripts.claim publishes it")
        #expect(read("adopted n1.7") == .adopted(sessionId: "n1.7", tokenHash: ""), "as nodes before 1.2 published it: forgotten whatever the token")
        #expect(read("held n1.7") == .held(sessionId: "n1.7"), "as SessionScripts.hold publishes it")
        #expect(ControlMessage.end(sessionId: "a.1", code: .sessionLimit, reason: nil).payload == "end a.1 4409")
        #expect(read("end a.1 4403 two  spaces") == .end(sessionId: "a.1", code: .disconnectedByServer, reason: "two  spaces"))
        #expect(read("end a.1") == .end(sessionId: "a.1", code: .sessionLimit, reason: nil), "no code: the session limit")
        #expect(read("end a.1 9999") == .end(sessionId: "a.1", code: .sessionLimit, reason: nil), "an unknown code: the session limit")
    }

    @Test func unknownOrIncompleteMessagesAreIgnored() {
        #expect(read("") == nil)
        #expect(read("adopted") == nil)
        #expect(read("adopted ") == nil)
        #expect(read("paused n1.7") == nil)
    }
}
