import Testing
@testable import RollcallProtocol

@Suite("JSON parser")
struct JSONParserTests {
    @Test("parses every kind of value")
    func parsesValues() throws {
        let value = try JSONParser.parse(#" {"a": [1, -2.5e3, true, false, null, "x"], "b": {}} "#)
        let object = try #require(value.objectValue)
        #expect(object.count == 2)
        #expect(value["a"] == [1, .number(JSONNumber(literal: "-2.5e3")), true, false, nil, "x"])
        #expect(value["b"] == .object(JSONObject()))
    }

    @Test("keeps number literals exactly, however large")
    func keepsNumberLiterals() throws {
        let huge = "123456789012345678901234567890e400"
        let value = try JSONParser.parse(huge)
        #expect(value.numberValue?.literal == huge)
        #expect(value.numberValue?.intValue == nil)
        #expect(value.compactString == huge)
    }

    @Test("decodes escapes and surrogate pairs")
    func decodesEscapes() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/\n\t\u00e9\ud83d\ude00""#)
        #expect(value.stringValue == "a\"b\\c/\n\té😀")
    }

    @Test("the last duplicate key wins")
    func duplicateKeys() throws {
        let value = try JSONParser.parse(#"{"op":"a","op":"b"}"#)
        #expect(value["op"] == "b")
    }

    @Test("rejects malformed input", arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1",
        "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "\"a\u{01}b\"", "[1] [2]", "{\"a\":1}x", "NaN", "Infinity", "'a'",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test("rejects invalid UTF-8 inside strings")
    func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    @Test("bounds nesting depth instead of overflowing the stack")
    func boundsDepth() throws {
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        let tooDeep = String(repeating: "{\"a\":", count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(tooDeep) }
    }
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test("writes compact JSON that parses back to the same value")
    func roundTrips() throws {
        let value: JSON = ["id": 7, "s": "line\nbreak \"quoted\" \\ \u{01} é", "a": [true, nil, -3], "o": [:]]
        let text = value.compactString
        #expect(!text.contains("\n"))
        #expect(try JSONParser.parse(text) == value)
        #expect(text == #"{"id":7,"s":"line\nbreak \"quoted\" \\ \u0001 é","a":[true,null,-3],"o":{}}"#)
    }

    @Test("writes integers of every size")
    func writesIntegers() {
        for n in [0, 1, -1, 9, 10, 123456789, Int.max, Int.min] {
            var writer = JSONWriter()
            writer.int(n)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(n))
        }
    }

    @Test("builds replies and events")
    func buildsFrames() throws {
        let ok = try JSONParser.parse(Frames.success(id: "x", result: ["a": 1]))
        #expect(ok == ["id": "x", "ok": true, "result": ["a": 1]])
        let failure = try JSONParser.parse(Frames.failure(id: 3, code: .rateLimited, message: "slow", retryAfterMs: 250))
        #expect(failure["error"]?["code"] == "RATE_LIMITED")
        #expect(failure["error"]?["retryAfterMs"] == 250)
        let event = try JSONParser.parse(Frames.event("presence") { w in w.key("seq"); w.int(4) })
        #expect(event == ["event": "presence", "seq": 4])
    }
}
