import Foundation
@testable import RollcallCore
import Testing

/// The commands of one store call run in Redis in the order given (docs/cluster.md: the core
/// relies on it, e.g. presence before user status), even for a script Redis has not seen yet.
@Suite("Cluster link: command order")
struct ClusterLinkOrderTests {
    @Test("a script's first run (not yet cached in Redis) still runs before the commands behind it")
    func firstRunKeepsTheOrder() throws {
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: "order:")
        let link = bed.links[0]
        var replies: [StoreTicket: Result<[StoreReply], StoreFailure>] = [:]
        link.deliver = { event in
            if case .storeReplied(let ticket, let result) = event { replies[ticket] = result }
        }
        func push(_ item: String) -> StoreScript {
            StoreScript(name: "test.push.\(item)", source: "redis.call('RPUSH', ARGV[1], '\(item)') return 1")
        }
        func run(_ ticket: UInt64, _ commands: [StoreCommand]) throws -> [StoreReply] {
            let key = StoreTicket(ticket)
            link.perform(.store(key, commands, .request))
            try bed.pump(until: { replies[key] != nil }, what: "the replies of call \(ticket)")
            return try replies[key]!.get()
        }

        // `second` is known to Redis; `first` has never been run.
        _ = try run(1, [.script(push("second"), arguments: [Array("warm-up".utf8)])])
        let list = Array("order:list".utf8)
        let replied = try run(2, [
            .script(push("first"), arguments: [list]),
            .script(push("second"), arguments: [list]),
            .command([Array("LRANGE".utf8), list, Array("0".utf8), Array("-1".utf8)]),
        ])
        let items = (replied.last?.elements ?? []).compactMap(\.text)
        #expect(items == ["first", "second"], "in the order of the call: \(replied)")
    }
}
