import ArgumentParser

/// `--binary`: the broker a scenario launches, in every scenario that launches one
/// (``BrokerTargetOptions`` and `cluster`).
struct BrokerBinaryOption: ParsableArguments {
    @Option(help: "rollcall binary to launch (default: the one next to this executable, else the repository's .build-release/release/rollcall).")
    var binary: String?

    /// `--binary` when given, else ``BrokerLauncher/defaultBinary``.
    var path: String { binary ?? BrokerLauncher.defaultBinary }
}
