import RollcallCore

/// Readers over every key group's bucket (docs/cluster.md, "Key groups and buckets"): one
/// command per group, all sent together, the replies handed over in group order once every
/// one answered, so that the caller merges them in Swift. With one group that is one command,
/// as before buckets existed.
extension ClusterPresence {
    /// Commands of one store call at most: a reader of 1024 groups sends its commands in calls
    /// of this many, which the link pipelines beside other calls instead of sending one call of
    /// 1024 alone (``ClusterLink/maxCommandsInFlight``).
    static let groupReadBatch = 64

    /// Runs `command(group)` for every group of ``ClusterKeys/groups``; `done` gets the replies
    /// in group order, or the first failure.
    func callEveryGroup(_ command: (Int) -> StoreCommand, then done: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        call(groups: Array(keys.groups.all), command, then: done)
    }

    /// Runs `command(group)` for each of `groups`, in calls of ``groupReadBatch``; `done` gets
    /// the replies in the order of `groups`, or the first failure. `priority`: ``StoreCallPriority/background``
    /// for the node's upkeep (the reaper's and the scanner's passes), so that requests waiting
    /// on the link go first.
    func call(groups: [Int], priority: StoreCallPriority = .request, _ command: (Int) -> StoreCommand,
              then done: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        let commands = groups.map(command)
        let batches = stride(from: 0, to: commands.count, by: Self.groupReadBatch).map {
            Array(commands[$0..<min($0 + Self.groupReadBatch, commands.count)])
        }
        gatherEvery(batches.count, { index, answer in store.call(batches[index], priority: priority, then: answer) }) { result in
            done(result.map { $0.flatMap { $0 } })
        }
    }
}
