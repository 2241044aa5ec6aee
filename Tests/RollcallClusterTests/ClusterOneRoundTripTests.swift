import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 30 item 4, "one round trip per op: no node-side read before the script". A join and a
/// `setState` used to read the member's state (`HGET … :st`) and then run their script with it
/// as `expected`: two round trips. The node now sends its guess (what the session last saw
/// stored; nothing for a first join), and a wrong guess is answered `retry` with the state
/// Redis has, so the next attempt needs no read either.
@Suite("Cluster: a join and a setState are one round trip to Redis")
struct ClusterOneRoundTripTests {
    /// The commands each store call of node `node` carries, by name (a script's name, else the command).
    private final class Calls {
        var made: [[String]] = []
    }

    private func record(_ bed: ClusterBed, node: Int) -> Calls {
        let calls = Calls()
        bed.beforeStoreCall = { index, commands in
            guard index == node else { return }
            calls.made.append(commands.map { command in
                switch command {
                case .script(let script, _): script.name
                case .command(let arguments): String(decoding: arguments.first ?? [], as: UTF8.self)
                }
            })
        }
        return calls
    }

    @Test("join, then setState: each one store call, its script alone")
    func joinAndSetStateAreOneCallEach() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "onertt:")
        let alice = try bed.login("alice", on: 0)
        let calls = record(bed, node: 0)
        let joined = try bed.request(alice, "join", ["channel": .string("room"), "state": .object(JSONObject([("mood", .string("calm"))]))])
        #expect(joined["ok"]?.boolValue == true, "\(joined.compactString)")
        #expect(calls.made == [["presence.join"]], "\(calls.made)")
        calls.made.removeAll()
        let set = try bed.request(alice, "setState", ["channel": .string("room"), "state": .object(JSONObject([("k", .string("v"))]))])
        #expect(set["ok"]?.boolValue == true, "\(set.compactString)")
        #expect(set["result"]?["state"]?["mood"]?.stringValue == "calm" && set["result"]?["state"]?["k"]?.stringValue == "v",
                "merged onto what the join stored: \(set.compactString)")
        #expect(calls.made == [["presence.setState"]], "\(calls.made)")
    }

    @Test("a guess another session made wrong (the same user's state changed on another node) costs one more attempt, and the change merges onto Redis' state")
    func aWrongGuessIsAnsweredWithTheState() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "onerttwrong:")
        let phone = try bed.member("alice", on: 0)
        let laptop = try bed.login("alice", on: 1)
        #expect(try bed.request(laptop, "join", ["channel": .string("room"), "state": .object(JSONObject([("a", .string("1"))]))])["ok"]?.boolValue == true)
        let calls = record(bed, node: 0)
        let set = try bed.request(phone, "setState", ["channel": .string("room"), "state": .object(JSONObject([("b", .string("2"))]))])
        #expect(set["ok"]?.boolValue == true, "\(set.compactString)")
        #expect(set["result"]?["state"]?["a"]?.stringValue == "1" && set["result"]?["state"]?["b"]?.stringValue == "2",
                "the laptop's key kept: \(set.compactString)")
        #expect(calls.made == [["presence.setState"], ["presence.setState"]], "\(calls.made)")
        let stored = try bed.redis.command(["HSTRLEN", "onerttwrong:{0}c:m:4:room:st", "alice"])
        #expect(stored == ":\(#"{"a":"1","b":"2"}"#.utf8.count)", "\(stored)")
    }

    @Test("setState before a join (no membership) is one call and answers pending, as before")
    func pendingStateIsOneCall() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "onerttpending:")
        let alice = try bed.login("alice", on: 0)
        let calls = record(bed, node: 0)
        let set = try bed.request(alice, "setState", ["channel": .string("room"), "state": .object(JSONObject([("k", .string("v"))]))])
        #expect(set["ok"]?.boolValue == true && set["result"]?["pending"]?.boolValue == true, "\(set.compactString)")
        #expect(calls.made == [["presence.setState"]], "\(calls.made)")
    }
}
