@testable import RollcallServer
import RollcallProtocol
import Testing

@Suite("MessageAssembler")
struct MessageAssemblerTests {
    var assembler = MessageAssembler()

    mutating func take(_ text: String, remaining: Int = 0, final: Bool = true, binary: Bool = false, limit: Int = 16)
        -> MessageAssembler.Outcome {
        take(Array(text.utf8), remaining: remaining, final: final, binary: binary, limit: limit)
    }

    mutating func take(_ bytes: [UInt8], remaining: Int = 0, final: Bool = true, binary: Bool = false, limit: Int = 16)
        -> MessageAssembler.Outcome {
        bytes.withUnsafeBytes {
            assembler.take($0, isBinary: binary, remainingInFrame: remaining, isFinalFragment: final, limit: limit)
        }
    }

    @Test mutating func aWholeFrameIsAMessageAtOnce() {
        #expect(take("{\"op\":1}") == .message(Array("{\"op\":1}".utf8)))
        #expect(assembler.partial.isEmpty)
    }

    @Test mutating func piecesOfAFrameAndFragmentsAreJoined() {
        #expect(take("ab", remaining: 2) == .incomplete)
        #expect(take("cd", remaining: 0, final: false) == .incomplete)
        #expect(take("ef") == .message(Array("abcdef".utf8)))
        #expect(assembler.partial.isEmpty)
    }

    @Test mutating func aBinaryFrameIs1003() {
        #expect(take("x", binary: true) == .fault(.binaryFrame, reason: "binary frames are not supported"))
    }

    @Test mutating func anOversizedMessageIs1009AtItsFirstChunk() {
        #expect(take("abcd", remaining: 100) == .fault(.frameTooBig, reason: "message larger than 16 bytes"))
        #expect(assembler.partial.isEmpty)
        #expect(take("0123456789", final: false) == .incomplete)
        #expect(take("0123456") == .fault(.frameTooBig, reason: "message larger than 16 bytes"))
        #expect(take("0123456789abcdef") == .fault(.frameTooBig, reason: "message larger than 16 bytes"))
        assembler.reset()
        #expect(take("0123456789abcdef") == .message(Array("0123456789abcdef".utf8)))
    }

    @Test mutating func invalidUTF8Is1007OnlyOnceTheMessageIsComplete() {
        // A character split across fragments is fine.
        #expect(take([0xC3], final: false) == .incomplete)
        #expect(take([0xA9]) == .message([0xC3, 0xA9]))
        #expect(take([0xC3, 0x28]) == .fault(.invalidUTF8, reason: "invalid UTF-8"))
        #expect(take([0xED, 0xA0, 0x80]) == .fault(.invalidUTF8, reason: "invalid UTF-8"))
    }

    @Test mutating func resetDropsAPartialMessage() {
        #expect(take("abc", final: false) == .incomplete)
        assembler.reset()
        #expect(take("d") == .message(Array("d".utf8)))
    }
}
