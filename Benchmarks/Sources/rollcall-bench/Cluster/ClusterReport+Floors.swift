import Foundation

/// The floors of the cost batches and the targets of issue 30 item 4 against them.
extension ClusterReport {
    /// Issue 30 item 4's Redis CPU per op targets (10-member channels), µs.
    static let redisTargets: [(op: String, micros: Double)] = [("join", 20), ("setState", 15), ("publish", 10)]
    /// Node CPU per op in cluster mode: at most this many times standalone's.
    static let nodeTargetFactor = 1.5

    func addFloors(_ result: inout BenchResult) {
        guard !floors.isEmpty else { return }
        var table = ["| setup | floor | ops | commandstats calls/op | Redis CPU µs/op (schedstat) | node CPU µs/op (all nodes) |",
                     "| --- | --- | ---: | ---: | ---: | ---: |"]
        for floor in floors {
            let label = CostFloorRun.Kind(rawValue: floor.kind)?.label ?? floor.kind
            table.append("| \(floor.setup) | \(label) | \(floor.ops) | \(format(Double(floor.calls) / Double(max(1, floor.ops)))) | "
                         + "\(format(floor.redisMicrosPerOp)) | \(format(floor.nodeMicrosPerOp)) |")
            result.metrics.append(BenchMetric("\(floor.setup): floor, \(label): Redis CPU per op", floor.redisMicrosPerOp, "µs"))
            result.metrics.append(BenchMetric("\(floor.setup): floor, \(label): node CPU per op", floor.nodeMicrosPerOp, "µs"))
        }
        result.notes.append("Floors, measured in the same run as the cost batches and the same way (CONFIG RESETSTAT, "
                            + "the same number of commands in rounds of one write from a connection of the bench's own, "
                            + "schedstat, idle subtracted). One session on the first node sits in the floor's channel with "
                            + "presence and messages off, so that node is subscribed and delivers each message to nobody.\n\n"
                            + table.joined(separator: "\n"))
        addTargets(&result)
    }

    /// Target, measured, floor, target ÷ floor and the verdict, per cluster setup and op.
    private func addTargets(_ result: inout BenchResult) {
        var table = ["| setup | op | measure | target µs | measured µs | floor µs | target ÷ floor | measured ÷ floor | verdict |",
                     "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for setup in Array(Set(floors.map(\.setup))).sorted() {
            let floorsHere = floors.filter { $0.setup == setup }
            guard let script = floorsHere.first(where: { $0.kind == CostFloorRun.Kind.minimalPresenceScript.rawValue }),
                  let publish = floorsHere.first(where: { $0.kind == CostFloorRun.Kind.publish.rawValue }) else { continue }
            let subscribedNodes = setup.hasPrefix("1 node") ? 1.0 : Double(nodes)
            for (op, target) in Self.redisTargets {
                guard let cost = costs.first(where: { $0.setup == setup && $0.op == op }), let measured = cost.redisMicrosPerOp else { continue }
                table.append(row(setup, op, "Redis CPU per op", target: target, measured: measured, floor: script.redisMicrosPerOp, &result))
                if let own = floorsHere.first(where: { CostFloorRun.Kind(rawValue: $0.kind)?.op == op }) {
                    table.append(row(setup, op, "Redis CPU per op, against the commands the op needs", target: target,
                                     measured: measured, floor: own.redisMicrosPerOp, &result))
                }
                guard let standalone = costs.first(where: { $0.setup == "standalone" && $0.op == op }) else { continue }
                table.append(row(setup, op, "node CPU per op (all nodes)", target: Self.nodeTargetFactor * standalone.brokerMicrosPerOp,
                                 measured: cost.brokerMicrosPerOp,
                                 floor: standalone.brokerMicrosPerOp + subscribedNodes * publish.nodeMicrosPerOp, &result))
            }
        }
        guard table.count > 2 else { return }
        result.notes.append("Issue 30 item 4 against its floors. Redis: the targets of the issue; the floor is one script "
                            + "that does what every presence op must (TIME, HGET, PUBLISH to one node), a lower bound (the "
                            + "cluster's events go to every subscribed node); the second Redis row of each op takes as its "
                            + "floor one script of the Redis commands that op needs for PROTOCOL 1.2's guarantees, with the "
                            + "op's arguments (OpFloorScripts.swift). Node: the target is \(format(Self.nodeTargetFactor)) × "
                            + "standalone's CPU per op in the same run; the floor is standalone's plus one parse of a pub/sub "
                            + "message on every node the event reaches (\(nodes) for \(nodes) nodes). Verdict: MET when measured ≤ "
                            + "target, BELOW FLOOR when the target is under its floor, else MISSED.\n\n" + table.joined(separator: "\n"))
    }

    private func row(_ setup: String, _ op: String, _ measure: String, target: Double, measured: Double, floor: Double,
                     _ result: inout BenchResult) -> String {
        let verdict = measured <= target ? "MET" : target < floor ? "BELOW FLOOR" : "MISSED"
        result.metrics.append(BenchMetric("\(setup): \(measure), \(op), target ÷ floor", target / max(floor, 1e-9), "×"))
        result.metrics.append(BenchMetric("\(setup): \(measure), \(op), measured ÷ floor", measured / max(floor, 1e-9), "×"))
        result.metrics.append(BenchMetric("\(setup): \(measure), \(op)", measured, "µs", atMost: target))
        return "| \(setup) | \(op) | \(measure) | \(format(target)) | \(format(measured)) | \(format(floor)) | "
            + "\(format(target / max(floor, 1e-9))) | \(format(measured / max(floor, 1e-9))) | \(verdict) |"
    }

    private func format(_ value: Double) -> String { BenchMetric.format(value) }
}
