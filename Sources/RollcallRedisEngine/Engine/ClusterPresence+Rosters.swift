import RollcallCore

/// One roster per node per `seq` (docs/cluster.md): the roster as of a channel's last event is
/// built by Redis once for each `seq` and roster version this node asks at, and encoded here
/// once; every snapshot at the same pair copies it (``LocalChannel/roster``).
extension ClusterPresence {
    /// The roster a snapshot script's answer stands for, kept as `channel`'s: the one the node
    /// sent (`sent`) when the script said it still holds (`held`), else the one it built (the
    /// flat `reply[1]` with its size `reply[0]`) at `seq` and `version`.
    func roster(replied reply: StoreReply, seq: Int, version: Int, held: Bool, sent: LocalChannel.Roster?,
                in channel: LocalChannel) -> LocalChannel.Roster {
        if held, let sent {
            channel.roster = sent
            return sent
        }
        let flat = reply[1].elements ?? []
        var entries: [(userId: Name, state: [UInt8], info: [UInt8]?)] = []
        entries.reserveCapacity(flat.count / 3)
        var index = 0
        while index + 2 < flat.count {
            let info = flat[index + 2].bytes.flatMap { $0.isEmpty ? nil : $0 }
            entries.append((Name(unchecked: flat[index].text ?? ""), flat[index + 1].bytes ?? Array("{}".utf8), info))
            index += 3
        }
        let total = Int(reply[0].integer ?? 0)
        let built = LocalChannel.Roster(seq: seq, version: version, page: RosterPage(encodedEntries: entries, more: total > entries.count),
                                        total: total)
        channel.roster = built
        return built
    }

}
