import RollcallClient
import RollcallProtocol
import Testing

/// A storage of user numbers `u<n>`, as a load generator would keep (membership only).
private struct NumberSet: RosterStorage {
    var numbers: Set<Int> = []
    var count: Int { numbers.count }
    mutating func removeAll() { numbers.removeAll() }
    mutating func insert(_ user: Int) -> Bool { numbers.insert(user).inserted }
    mutating func remove(_ user: Int) -> Bool { numbers.remove(user) != nil }
}

private func number(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard bytes.first == UInt8(ascii: "u") else { return nil }
    return Int(String(decoding: bytes.dropFirst(), as: UTF8.self))
}

/// The raw-line path gives the same membership, seq and outcomes as the parsed one.
@Suite struct RosterLineTests {
    private func apply(_ line: String, to roster: inout PresenceRoster<NumberSet>) -> RosterOutcome {
        var bytes = Array(line.utf8)
        return bytes.withUnsafeMutableBytes { roster.apply(line: UnsafeRawBufferPointer($0), user: number) }
    }

    @Test func rawLinesEditMembershipAndCheckSeq() {
        var roster = PresenceRoster(channel: "room", members: NumberSet())
        #expect(apply(#"{"event":"presence","type":"snapshot","channel":"room","snapshot":[{"userId":"u1","state":{"a":"[}"}},{"userId":"u2","state":{}},{"userId":"x"}],"occupancy":3,"mode":"announce","seq":4}"#, to: &roster) == .applied)
        #expect(roster.members.numbers == [1, 2])
        #expect(roster.foreignUsers == 1)
        #expect(roster.occupancy == 3)
        #expect(apply(#"{"event":"presence","type":"join","channel":"room","publisher":"u3","state":{},"occupancy":4,"seq":5}"#, to: &roster) == .applied)
        #expect(apply(#"{"event":"presence","type":"interval","channel":"room","interval":{"join":["u7"],"leave":["u1"],"timeout":["u3"],"stateChanged":[{"userId":"u7","state":{"k":"v"}}]},"occupancy":3,"seq":6}"#, to: &roster) == .applied)
        #expect(roster.members.numbers == [2, 7])
        #expect(roster.lastKind == .interval)
        #expect(apply(#"{"event":"presence","type":"leave","channel":"room","publisher":"u2","seq":9}"#, to: &roster) == .needsResync(expectedSeq: 7, receivedSeq: 9))
        #expect(apply(#"{"event":"message","channel":"room","message":1}"#, to: &roster) == .ignored)
        #expect(apply(#"{"event":"presence","type":"snapshot","channel":"room","snapshot":[{"userId":"u9"}],"truncated":true,"nextPage":"p","seq":20}"#, to: &roster) == .fetchPage("p"))
        #expect(roster.truncatedSnapshots == 1)
        #expect(!roster.isStale)
        #expect(roster.members.numbers == [9])
    }

    @Test func rawPagesCompleteATruncatedSnapshot() {
        var roster = PresenceRoster(channel: "room", members: NumberSet())
        #expect(apply(#"{"event":"presence","type":"snapshot","channel":"room","snapshot":[{"userId":"u1"}],"truncated":true,"nextPage":"c1","seq":3}"#, to: &roster) == .fetchPage("c1"))
        #expect(roster.pendingPage == "c1")
        func merge(_ line: String) -> RosterOutcome {
            var bytes = Array(line.utf8)
            return bytes.withUnsafeMutableBytes { roster.mergePage(line: UnsafeRawBufferPointer($0), user: number) }
        }
        #expect(merge(#"{"id":9,"ok":true,"result":{"users":[{"userId":"u2","state":{"x":"]"}},{"userId":"u1"}],"nextPage":"c2","seq":3}}"#) == .fetchPage("c2"))
        #expect(merge(#"{"id":10,"ok":true,"result":{"nextPage":null,"users":[{"userId":"u5"}]}}"#) == .applied)
        #expect(roster.pendingPage == nil)
        #expect(roster.members.numbers == [1, 2, 5])
        #expect(merge(#"{"id":11,"ok":true,"result":{}}"#) == .ignored)
    }
}
