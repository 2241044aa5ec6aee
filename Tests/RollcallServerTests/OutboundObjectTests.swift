@testable import RollcallServer
import RollcallProtocol
import Testing

/// The transport tells a reply from an event by its first bytes; these hold only while the
/// encoder writes a reply's `id` first and an event's `event` first.
@Suite("OutboundObject")
struct OutboundObjectTests {
    @Test func repliesFromTheEncoderAreReplies() {
        #expect(OutboundObject.isReply(Frames.success(id: 7, result: .object([:]))))
        #expect(OutboundObject.isReply(Frames.success(id: .string("a"), result: .null)))
        #expect(OutboundObject.isReply(Frames.failure(id: .null, code: .invalidRequest, message: "bad")))
    }

    @Test func eventsAndScrapsAreNot() {
        #expect(!OutboundObject.isReply(Frames.event("presence") { $0.key("type"); $0.string("join") }))
        #expect(!OutboundObject.isReply(Frames.event("message") { $0.key("id"); $0.string("x") }))
        #expect(!OutboundObject.isReply([]))
        #expect(!OutboundObject.isReply(Array(#"{"id""#.utf8)))
    }
}
