import Foundation

/// Turns the storm outcomes into the bench's metrics (with the issue's targets), notes and chart.
struct StormReport {
    let outcomes: [StormOutcome]
    let snapshotMax: Int
    let attached: Bool

    func result() -> BenchResult {
        var result = BenchResult(scenario: "storm")
        result.chartTitle = "storm: clients holding the final roster"
        result.xLabel = "seconds since the first join"
        result.yLabel = "% of the size (joined) / of the remaining clients (final roster)"
        for outcome in outcomes {
            result.metrics += metrics(outcome)
            result.series += series(outcome)
            result.counters.merge(counters(outcome)) { $1 }
        }
        result.notes = notes()
        return result
    }

    private func metrics(_ o: StormOutcome) -> [BenchMetric] {
        let n = "\(o.plan.users)"
        let mib = 1024.0 * 1024.0
        var list: [BenchMetric] = [
            BenchMetric("\(n): login of all sessions (before the storm)", o.loginSeconds, "s"),
            BenchMetric("\(n): joins / leaves answered ok", Double(o.joinsOK + o.leavesOK), "", atLeast: Double(o.plan.users + o.plan.leaverCount)),
            BenchMetric("\(n): presence events delivered", Double(o.tallies.events)),
            BenchMetric("\(n): presence bytes delivered", Double(o.tallies.bytes) / mib, "MiB"),
            BenchMetric("\(n): frames received (all)", Double(o.framesReceived)),
            BenchMetric("\(n): bytes received (all)", Double(o.bytesReceived) / mib, "MiB"),
        ]
        if o.compressedClients > 0 {
            list += [
                BenchMetric("\(n): clients with permessage-deflate", Double(o.compressedClients)),
                BenchMetric("\(n): bytes received after inflating", Double(o.bytesInflated) / mib, "MiB"),
            ]
        }
        if o.plan.users == 1000 {
            list.append(BenchMetric("\(n): broker CPU, first join → converged", o.brokerCPU.total, "s", atMost: 1))
        } else {
            list.append(BenchMetric("\(n): broker CPU, first join → converged", o.brokerCPU.total, "s"))
        }
        list += [
            BenchMetric("\(n): … of which user (broker code)", o.brokerCPU.user, "s"),
            BenchMetric("\(n): … of which system (kernel: poll, send)", o.brokerCPU.system, "s"),
            BenchMetric("\(n): broker CPU when idle before the storm", o.idleCPUPerSecond, "s/s"),
            BenchMetric("\(n): bench CPU, same window", o.benchCPU.total, "s"),
            BenchMetric("\(n): broker RSS at convergence", Double(o.brokerRSSKiB) / 1024, "MiB"),
        ]
        let limit = o.plan.intervalSeconds + 1
        if let brokerSide = o.brokerLastFrameAfterLastJoin {
            list.append(BenchMetric("\(n): converged after the last join, broker side (last frame written)", brokerSide, "s", atMost: limit))
        }
        if let afterJoin = o.convergedAfterLastJoin, let afterLeave = o.convergedAfterLastLeave {
            list.append(BenchMetric("\(n): converged after the last join", afterJoin, "s", atMost: limit))
            list.append(BenchMetric("\(n): converged after the last leave", afterLeave, "s"))
        } else {
            // Not converged: the bounded wait stands in for the time, and fails the target.
            list.append(BenchMetric("\(n): converged after the last join (NOT within the wait; waited)",
                                    o.waited + o.lastLeaveAt - o.lastJoinAt, "s", atMost: limit))
            if let late = o.lateConvergenceAfterLastJoin {
                list.append(BenchMetric("\(n): … all rosters final, late, after the last join", late, "s"))
            }
        }
        list += [
            BenchMetric("\(n): remaining clients without the final roster at the end", Double(o.remainingClients - o.finalClients), "", atMost: 0),
            BenchMetric("\(n): disconnects", Double(o.disconnects), "", atMost: 0),
            BenchMetric("\(n): seq gaps + occupancy mismatches seen by clients",
                        Double(o.tallies.seqGaps + o.tallies.occupancyMismatches), "", atMost: 0),
            BenchMetric("\(n): getOnlineUsers equals the final set", o.onlineUsersMatch ? 1 : 0, "", atLeast: 1),
        ]
        if o.checkedSharedScans {
            list.append(BenchMetric("\(n): lines where the shared scan and the client library's roster differed",
                                    Double(o.tallies.scanCheckDifferences), "", atMost: 0))
        }
        return list
    }

    private func series(_ o: StormOutcome) -> [BenchSeries] {
        let size = Double(max(1, o.plan.users))
        let remaining = Double(max(1, o.plan.users - o.plan.leaverCount))
        return [
            BenchSeries(name: "\(o.plan.users): joined %", points: o.timeline.map { [$0[0], $0[1] / size * 100] }),
            BenchSeries(name: "\(o.plan.users): final roster %", points: o.timeline.map { [$0[0], $0[2] / remaining * 100] }),
        ]
    }

    private func counters(_ o: StormOutcome) -> [String: Int] {
        let n = o.plan.users
        var values: [String: Int] = [
            "\(n).presenceEvents": o.tallies.events, "\(n).presenceBytes": o.tallies.bytes,
            "\(n).framesReceived": o.framesReceived, "\(n).bytesReceived": o.bytesReceived,
            "\(n).seqGaps": o.tallies.seqGaps, "\(n).occupancyMismatches": o.tallies.occupancyMismatches,
            "\(n).truncatedSnapshots": o.tallies.truncatedSnapshots, "\(n).foreignUsers": o.tallies.foreignUsers,
            "\(n).disconnects": o.disconnects, "\(n).joinsFailed": o.joinsFailed, "\(n).leavesFailed": o.leavesFailed,
            "\(n).onlineUsers": o.onlineUsersCount,
        ]
        for (kind, count) in o.tallies.byKind { values["\(n).events.\(kind)"] = count }
        return values
    }

    private func notes() -> [String] {
        var notes = [
            "Joins are spread evenly over the join window, one session per user (`storm-<n>`); then every "
                + "10th user (by number) leaves, spread over the leave window. Logins happen before the storm and are not in the CPU figures.",
            "Convergence: each remaining client keeps a roster from its snapshot and presence events (scanned from the raw "
                + "event bytes: snapshot replaces; join/leave/timeout; interval join/leave/timeout lists); the time is when the last "
                + "client's roster last became the final set, from the last join (and last leave) request sent. The final set is "
                + "checked against `getOnlineUsers` paged once quiet. Broker side: the broker's "
                + "`rollcall_last_frame_written_timestamp_seconds` (wall clock, after the last byte of a frame was handed to a "
                + "socket), read once the clients were quiet for 0.5 s, minus the wall-clock time of the last join.",
            "Presence events/bytes: event lines the clients received (all types, snapshots included); frames/bytes: "
                + "`RollcallConnection.counters` of the storm clients from the first join (replies included). CPU: /proc of the broker and of the bench.",
            "presence.snapshotMaxMembers is \(snapshotMax) (the broker's default is 1000). Plain-socket clients (the default) complete a "
                + "truncated snapshot with getOnlineUsers pages of 1000 (includeState true), as docs/protocol.md tells a client to; "
                + "with --lws-clients nothing pages, so the bench raises the cap to the largest size.",
        ]
        for o in outcomes {
            let kinds = o.tallies.byKind.sorted { "\($0.key)" < "\($1.key)" }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            notes.append("\(o.plan.users) users: events by type: \(kinds); truncated snapshots \(o.tallies.truncatedSnapshots), "
                         + "getOnlineUsers pages merged \(o.tallies.pages) (\(BenchMetric.format(Double(o.tallies.pageBytes) / 1_048_576)) MiB); "
                         + "joins failed \(o.joinsFailed), leaves failed \(o.leavesFailed); last join at \(String(format: "%.2f", o.lastJoinAt)) s, "
                         + "last leave at \(String(format: "%.2f", o.lastLeaveAt)) s after the first join; "
                         + "distinct lines scanned \(o.linesScanned), lines whose scan was shared (byte-identical to one scanned) \(o.linesShared)"
                         + (o.checkedSharedScans ? "; --check-shared-scans: lines where the shared scan and the client library's roster differed \(o.tallies.scanCheckDifferences)." : "."))
        }
        for o in outcomes where !o.closeReasons.isEmpty {
            let reasons = o.closeReasons.sorted { $0.key < $1.key }.map { "\($0.key.dropFirst(7)) ×\($0.value)" }.joined(separator: ", ")
            notes.append("\(o.plan.users) users: disconnects by close code: \(reasons).")
        }
        if attached { notes.append("Attached broker (--url/--pid): its configuration, not the bench's, applies.") }
        return notes
    }
}
