import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §1: binary frames, invalid UTF-8 and oversized messages close only the
/// offending connection.
@Suite("Protocol faults")
struct ProtocolFaultTests {
    @Test("binary frame: close 1003; other sessions unaffected")
    func binaryFrame() throws {
        let broker = try BrokerProcess()
        let bystander = try broker.session("bob")
        let connection = try broker.session("alice")
        connection.sendBinary(Array("{\"id\":1,\"op\":\"ping\"}".utf8))
        let close = try connection.waitForClose(timeout: .seconds(5))
        #expect(close.code == 1003)
        #expect(close.closedByServer)
        #expect(try bystander.request("ping").ok)
    }

    @Test("invalid UTF-8 text: close 1007; other sessions unaffected")
    func invalidUTF8() throws {
        let broker = try BrokerProcess()
        let bystander = try broker.session("bob")
        let connection = try broker.session("alice")
        connection.sendRawText(Array("{\"id\":1,\"op\":\"ping\",\"x\":\"".utf8) + [0xC3, 0x28, 0xFF] + Array("\"}".utf8))
        let close = try connection.waitForClose(timeout: .seconds(5))
        #expect(close.code == 1007)
        #expect(try bystander.request("ping").ok)
    }

    @Test("invalid UTF-8 split across fragments: close 1007")
    func invalidUTF8Fragmented() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        // A valid 2-byte sequence cut in half is fine; an overlong encoding is not.
        connection.sendFragmented(Array("{\"id\":1,\"op\":\"ping\",\"x\":\"".utf8) + [0xE2, 0x82] + [0xC0, 0xAF] + Array("\"}".utf8), fragmentSize: 27)
        #expect(try connection.waitForClose(timeout: .seconds(5)).code == 1007)
    }

    // Sizes stay under 4 KiB on the wire (lws's read size): the broker then reads the offending message in
    // one go and closes a socket with nothing unread, so the close frame is not lost to a
    // TCP reset (which would be the broker's right, but would hide the code).

    @Test("a message exactly maxFrameBytes long is accepted; one byte more closes 1009")
    func frameLimit() throws {
        let limit = 1024
        let broker = try BrokerProcess(config: ["limits": ["maxFrameBytes": limit]])
        let bystander = try broker.session("bob")
        let connection = try broker.session("alice")

        // Exactly at the limit, sent in fragments that the broker must reassemble.
        let atLimit = paddedPing(id: "exact", totalBytes: limit)
        #expect(atLimit.count == limit)
        connection.expectReply(id: .string(String(decoding: atLimit, as: UTF8.self).idValue))
        connection.sendFragmented(atLimit, fragmentSize: 256)
        let reply = try connection.waitForReply(id: .string(String(decoding: atLimit, as: UTF8.self).idValue), timeout: .seconds(5))
        #expect(reply.ok)

        // One byte over, again fragmented (each fragment well under the limit).
        connection.sendFragmented(paddedPing(id: "over", totalBytes: limit + 1), fragmentSize: 256)
        let close = try connection.waitForClose(timeout: .seconds(5))
        #expect(close.code == 1009)
        #expect(try bystander.request("ping").ok)
    }

    @Test("one unfragmented message over maxFrameBytes: close 1009")
    func oversizedSingleFrame() throws {
        let broker = try BrokerProcess(config: ["limits": ["maxFrameBytes": 1024]])
        let connection = try broker.session("alice")
        connection.sendRawText(paddedPing(id: "big", totalBytes: 3000))
        #expect(try connection.waitForClose(timeout: .seconds(5)).code == 1009)
    }

    @Test("a client still sending when it is closed for a fault reads the close code, not a reset")
    func faultCloseWhileClientSends() throws {
        let broker = try BrokerProcess(config: ["limits": ["maxFrameBytes": 1024]])
        let bystander = try broker.session("bob")
        let connection = try broker.session("alice")
        // Refused at its first chunk: most of this frame is still on its way (or unread in
        // the broker's receive buffer) when the broker closes, and more frames follow.
        connection.sendRawText(paddedPing(id: "huge", totalBytes: 256 * 1024))
        for index in 0..<64 { connection.sendRawText(paddedPing(id: "after\(index)", totalBytes: 1000)) }
        let close = try connection.waitForClose(timeout: .seconds(10))
        #expect(close.closedByServer, "\(close)")
        #expect(close.code == 1009, "\(close)")
        #expect(try bystander.request("ping").ok)
    }

    /// `{"id":"<id><padding>","op":"ping"}` of exactly `totalBytes` bytes.
    func paddedPing(id: String, totalBytes: Int) -> [UInt8] {
        let skeleton = "{\"id\":\"\(id)\",\"op\":\"ping\"}"
        let padding = String(repeating: "p", count: totalBytes - skeleton.utf8.count)
        return Array("{\"id\":\"\(id)\(padding)\",\"op\":\"ping\"}".utf8)
    }
}

private extension String {
    /// The `id` string of a padded ping built by `paddedPing`.
    var idValue: String {
        let start = self.index(self.startIndex, offsetBy: 7)
        let end = self.range(of: "\",\"op\"")!.lowerBound
        return String(self[start..<end])
    }
}
