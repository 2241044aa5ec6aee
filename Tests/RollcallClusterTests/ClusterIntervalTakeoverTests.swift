import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 9: an interval flush relied on the timer of the node that made the change;
/// `P due` was written but never read. When that node died, the `interval` event waited for the
/// channel's next change. Now every node's reaper flushes the channels whose flush is overdue by
/// a heartbeat (the flush script is idempotent: one `interval` event per due time).
@Suite("Cluster: interval flushes outlive the node that scheduled them")
struct ClusterIntervalTakeoverTests {
    @Test("a change made through a node killed right after is still sent in an interval event")
    func anotherNodeFlushes() throws {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 2
        configuration.presence.hysteresis = 0
        configuration.presence.intervalSeconds = 0.5
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "interval:")
        let watcher = try bed.login("watcher", on: 0)
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        for index in 0..<3 {
            let member = try bed.login("member-\(index)", on: 0)
            #expect(try bed.request(member, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        }
        // The last member's join is flushed by node 0's own timer; after it node 0 has nothing due.
        try bed.pump(until: {
            watcher.events.contains { event in
                event.string("type") == "interval" && (event["interval"]?["join"]?.arrayValue ?? []).contains { $0.stringValue == "member-2" }
            }
        }, what: "the channel in interval mode, with every change so far sent")
        watcher.events.removeAll()

        let joiner = try bed.login("joiner", on: 1)
        #expect(try bed.request(joiner, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        bed.stop(node: 1)
        try bed.pump(until: {
            watcher.events.contains { event in
                event.string("type") == "interval"
                    && (event["interval"]?["join"]?.arrayValue ?? []).contains { $0.stringValue == "joiner" }
            }
        }, timeout: 3, what: "an interval event with the join made through the killed node")
    }
}
