@testable import RollcallCore
import RollcallProtocol
import Testing

@Suite struct ChannelPatternTests {
    @Test(arguments: [
        ("room:*", "room:1", true), ("room:*", "room:", true), ("room:*", "lobby", false),
        ("room:?", "room:1", true), ("room:?", "room:12", false), ("*", "anything", true),
        ("a*b*c", "aXXbYYc", true), ("a*b*c", "aXXbYY", false), ("?é", "xé", true),
        ("lobby", "lobby", true), ("lobby", "Lobby", false), ("*:chat", "team:chat", true),
    ])
    func globs(pattern: String, name: String, expected: Bool) {
        #expect(ChannelPattern.matches(pattern, name) == expected)
    }

    @Test func grantsWithoutPatternsAllowEverything() {
        #expect(Grant.unlimited.allows(channel: Name(unchecked: "x")))
        #expect(!Grant(channelPatterns: []).allows(channel: Name(unchecked: "x")))
        #expect(Grant(channelPatterns: ["a", "x*"]).allows(channel: Name(unchecked: "xy")))
    }
}

@Suite struct PageCursorTests {
    @Test func roundTripsAndRejectsForeignCursors() {
        for text in ["bob", "é", "a b", "z\u{301}"] {
            let name = Name(unchecked: text)
            #expect(PageCursor.decode(PageCursor.encode(after: name)) == name)
        }
        #expect(PageCursor.decode("bob") == nil)
        #expect(PageCursor.decode("u1.6") == nil)
        #expect(PageCursor.decode("u1.zz") == nil)
        #expect(PageCursor.decode("u1.ff") == nil)  // not UTF-8
        #expect(PageCursor.decode("u1.") == nil)
    }
}

@Suite struct PresenceStateTests {
    @Test func mergesAndComparesByBytes() throws {
        var limits = Configuration.State()
        limits.maxKeys = 3
        let update = try StateUpdate(object(["b": "1", "a": "2", "b": "3"]), limits: limits)
        let state = try update.merged(into: .empty, limits: limits)
        #expect(state.entries.map(\.key) == ["a", "b"])
        #expect(state.json == ["a": "2", "b": "3"])
        #expect(state.totalBytes == 4)
        var other = PresenceState()
        other.set("é", "x")
        var decomposed = PresenceState()
        decomposed.set("e\u{301}", "x")
        #expect(other != decomposed)
        #expect(throws: BrokerError.self) { try StateUpdate(object(["a": "1", "b": "2", "c": "3", "d": "4"]), limits: limits).merged(into: .empty, limits: limits) }
    }

    @Test func rejectsEachBadEntryWithItsCode() {
        var limits = Configuration.State()
        limits.maxKeyBytes = 2
        limits.maxValueBytes = 3
        func code(_ object: JSONObject) -> ErrorCode? {
            do { _ = try StateUpdate(object, limits: limits); return nil } catch { return error.code }
        }
        #expect(code(JSONObject([("a", .int(1))])) == .invalidRequest)
        #expect(code(JSONObject([("", "v")])) == .invalidArgument)
        #expect(code(JSONObject([("abc", "v")])) == .keyTooLong)
        #expect(code(JSONObject([("a", "vvvv")])) == .valueTooLong)
        #expect(code(JSONObject([("ab", "vvv")])) == nil)
    }
}

private func object(_ pairs: KeyValuePairs<String, JSON>) -> JSONObject {
    JSONObject(pairs.map { ($0.key, $0.value) })
}
