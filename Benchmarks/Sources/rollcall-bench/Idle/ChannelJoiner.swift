import Foundation
import RollcallClient
import RollcallProtocol

/// Joins logged-in sessions to their channels (with presence) and counts what comes back:
/// join replies, and every event line (snapshots, interval events) through the cheap raw hook.
final class ChannelJoiner {
    let counters = Counters()

    /// Counts every event each session receives from now on, without parsing it.
    func countEvents(of sessions: [RollcallConnection]) {
        let counters = self.counters
        for session in sessions {
            session.onRawEvent = { _ in counters.add("events") }
            session.onClose = { _ in counters.add("closed") }
        }
    }

    /// Sends `join {channel: channelName(i), presence: true}` on every session and waits up to
    /// `timeout` seconds for the replies, printing progress. Returns the seconds it took.
    func join(_ sessions: [RollcallConnection], channelName: (Int) -> String, timeout: Double, label: String) -> Double {
        let counters = self.counters
        let start = MonotonicSeconds.now
        for (index, session) in sessions.enumerated() {
            let args: JSON = ["channel": .string(channelName(index)), "presence": true]
            session.send(Op.join.rawValue, args) { reply in counters.add(reply.ok ? "joined" : "joinFailed") }
        }
        let deadline = start + timeout
        var lastPrint = start
        while counters["joined"] + counters["joinFailed"] + counters["closed"] < sessions.count,
              MonotonicSeconds.now < deadline {
            usleep(20_000)
            if MonotonicSeconds.now - lastPrint >= 1 {
                print("\(label): \(counters["joined"])/\(sessions.count) joined, \(counters["joinFailed"]) failed, \(counters["events"]) events")
                lastPrint = MonotonicSeconds.now
            }
        }
        return MonotonicSeconds.now - start
    }
}
