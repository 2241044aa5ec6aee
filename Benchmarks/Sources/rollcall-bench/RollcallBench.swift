import ArgumentParser

/// `rollcall-bench`: load scenarios against a real broker. One subcommand per scenario
/// (one file each); shared pieces (broker launcher, process sampler, reports) live in `Support/`.
@main
struct RollcallBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollcall-bench",
        abstract: "Load scenarios against a rollcall broker (127.0.0.1 only).",
        subcommands: [Fanout.self, VersusMosquitto.self, Idle.self, Storm.self, SnapshotBench.self, Latency.self, Listing.self, Connect.self, Soak.self, Summary.self, Cluster.self, Faults.self, SlowConsumers.self]
    )
}
