@testable import RollcallCore
import Testing

/// ``JoinedChannels`` behaves as a dictionary whatever its form (none, one inline, many).
@Suite struct JoinedChannelsTests {
    private func key(_ name: String, _ type: ChannelType = .message) -> ChannelKey {
        ChannelKey(type: type, name: Name(unchecked: name))
    }
    private let both = JoinFlags(presence: true, messages: true)
    private let presenceOnly = JoinFlags(presence: true, messages: false)

    /// The entries as a dictionary, to compare with a reference one.
    private func asDictionary(_ joined: JoinedChannels) -> [ChannelKey: JoinFlags] {
        Dictionary(uniqueKeysWithValues: joined.map { ($0.key, $0.value) })
    }

    @Test func followsADictionaryThroughAddsUpdatesAndRemovals() {
        var joined = JoinedChannels()
        var reference: [ChannelKey: JoinFlags] = [:]
        // Same name in both namespaces, updates of the inline entry and of the table, removal
        // of absent keys, and back down to one and to none.
        let steps: [(ChannelKey, JoinFlags?)] = [
            (key("a"), both), (key("a"), presenceOnly), (key("b"), nil), (key("a", .stream), both),
            (key("b"), both), (key("a"), nil), (key("b"), presenceOnly), (key("a", .stream), nil),
            (key("b"), nil), (key("b"), nil), (key("c"), both),
        ]
        for (channel, flags) in steps {
            joined[channel] = flags
            reference[channel] = flags
            #expect(asDictionary(joined) == reference)
            #expect(joined.count == reference.count)
            #expect(joined.isEmpty == reference.isEmpty)
            #expect(Set(joined.keys) == Set(reference.keys))
            for probe in [key("a"), key("b"), key("c"), key("a", .stream)] {
                #expect(joined[probe] == reference[probe])
            }
        }
    }
}
