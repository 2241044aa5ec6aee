@testable import RollcallCore
import RollcallProtocol
import Testing

@Suite struct UserChannelIndexTests {
    private func key(_ type: ChannelType, _ name: String) -> ChannelKey { ChannelKey(type: type, name: Name(unchecked: name)) }
    private let alice = Name(unchecked: "alice")

    @Test func keepsEachUsersChannelsInTypeThenByteOrder() {
        var index = UserChannelIndex()
        for (type, name) in [(ChannelType.stream, "a"), (.message, "é"), (.message, "b"), (.message, "B"), (.message, "b")] {
            index.add(key(type, name), for: alice)
        }
        #expect(index.channels(of: alice) == [key(.message, "B"), key(.message, "b"), key(.message, "é"), key(.stream, "a")])
        #expect(index.channels(of: Name(unchecked: "bob")).isEmpty)
    }

    @Test func removingTheLastChannelForgetsTheUser() {
        var index = UserChannelIndex()
        index.add(key(.message, "x"), for: alice)
        index.remove(key(.message, "y"), for: alice)
        #expect(index.channels(of: alice) == [key(.message, "x")])
        index.remove(key(.message, "x"), for: alice)
        #expect(index.channels(of: alice).isEmpty)
        index.remove(key(.message, "x"), for: alice)
        #expect(index.channels(of: alice).isEmpty)
    }

    @Test func listingEncodesTheSameObjectsAsATree() throws {
        var index = UserChannelIndex()
        index.add(key(.stream, "s\"1"), for: alice)
        index.add(key(.message, "m"), for: alice)
        let encoded = JSON.object(["userId": "alice", "result": index.listing(of: alice)]).compactString
        let expected: JSON = ["userId": "alice", "result": [
            "totalChannel": 2,
            "channels": [["channel": "m", "channelType": "message"], ["channel": "s\"1", "channelType": "stream"]],
        ]]
        #expect(encoded == expected.compactString)
        #expect(try JSONParser.parse(encoded) == expected)
    }
}

@Suite struct UserChannelIndexSharingTests {
    @Test func aChannelsEntrySurvivesUntilItsLastUserLeaves() throws {
        var index = UserChannelIndex()
        let room = ChannelKey(type: .message, name: Name(unchecked: "room"))
        let alice = Name(unchecked: "alice"), bob = Name(unchecked: "bob")
        index.add(room, for: alice)
        index.add(room, for: bob)
        index.add(room, for: bob)
        index.remove(room, for: alice)
        let expected: JSON = ["totalChannel": 1, "channels": [["channel": "room", "channelType": "message"]]]
        #expect(try JSONParser.parse(index.listing(of: bob).encoded()) == expected)
        index.remove(room, for: bob)
        #expect(try JSONParser.parse(index.listing(of: bob).encoded()) == ["totalChannel": 0, "channels": []])
    }
}
