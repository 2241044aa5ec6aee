import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// The §4 roster invariant across nodes (PROTOCOL §9): nine clients, three on each node of a
/// cluster, make a seeded random walk of joins, leaves, setState and removeState; each rebuilds
/// the channel's roster with the client library's `Roster` from its snapshot and events. At
/// quiet points every joined client's roster equals `getOnlineUsers` (all pages, read from each
/// node in turn). `ROLLCALL_SEED` replays a failing walk; failures print the seed.
@Suite("Cluster roster invariant", .serialized)
struct ClusterRosterInvariantTests {
    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case announce, interval
        var testDescription: String { rawValue }
        var config: [String: Any] {
            switch self {
            case .announce: [:]
            case .interval: ["presence": ["maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2]]
            }
        }
        var defaultSeed: UInt64 { self == .announce ? 12 : 1212 }
    }

    @Test("rosters rebuilt from snapshot + events on every node equal getOnlineUsers once quiet", arguments: Mode.allCases)
    func rostersMatchTheListingOnEveryNode(mode: Mode) throws {
        let seed = ProcessInfo.processInfo.environment["ROLLCALL_SEED"].flatMap(UInt64.init) ?? mode.defaultSeed
        let cluster = try ClusterProcess(config: mode.config)
        let channel = "arena"
        var clients = try (0..<9).map { try ClusterRosterClient(cluster: cluster, userId: "u\($0)", node: $0 % 3, channel: channel) }
        let auditors = try (0..<3).map { try cluster.session("auditor\($0)", node: $0) }
        var random = SeededGenerator(seed: seed)
        var intervalEvents = 0
        var checks = 0

        func checkQuiet(_ label: String) throws {
            let auditor = auditors[checks % 3]
            checks += 1
            var online: [String: [String: String]] = [:]
            let quiet = try eventually(timeout: 20) {
                online = try auditor.onlineUsers(channel, pageSize: 4)
                for index in clients.indices { intervalEvents += clients[index].catchUp() }
                return clients.allSatisfy { !$0.isJoined || $0.comparableMembers == $0.comparable(online) }
            }
            for client in clients where client.isJoined {
                #expect(client.comparableMembers == client.comparable(online),
                        "seed \(seed), \(label): \(client.userId) on n\(client.node + 1) holds \(client.comparableMembers ?? [:]) but n\((checks - 1) % 3 + 1) lists \(online)")
                #expect(client.problems.isEmpty, "seed \(seed), \(label), \(client.userId) on n\(client.node + 1): \(client.problems.prefix(5))")
            }
            #expect(quiet, "seed \(seed), \(label): not quiet within 20 s")
        }

        let steps = 240
        for step in 0..<steps {
            let index = Int(random.next() % UInt64(clients.count))
            try clients[index].randomStep(&random)
            if step == steps / 2 - 1 { try checkQuiet("after \(step + 1) steps") }
        }
        try checkQuiet("after \(steps) steps")
        if mode == .interval { #expect(intervalEvents > 0, "seed \(seed): the interval run did reach interval mode") }
    }
}
