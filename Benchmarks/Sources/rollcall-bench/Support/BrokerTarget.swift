import ArgumentParser
import Foundation

/// Options every scenario shares: which broker to load (a launched one or `--url` + `--pid`).
struct BrokerTargetOptions: ParsableArguments {
    @Option(help: "Attach to a running broker at this ws:// URL (needs --pid); default: launch one.")
    var url: String?

    @Option(help: "PID of the broker given with --url (its /proc entry is sampled).")
    var pid: Int32?

    @OptionGroup var broker: BrokerBinaryOption

    func validate() throws {
        if (url == nil) != (pid == nil) { throw ValidationError("--url and --pid go together") }
        if let url, !(url.hasPrefix("ws://127.0.0.1:") || url.hasPrefix("ws://localhost:")) {
            throw ValidationError("benchmarks only target 127.0.0.1 (got \(url))")
        }
    }

    /// Launches a broker (with `config` merged over the bench defaults) or attaches.
    func resolve(config: [String: Any] = [:]) throws -> BrokerTarget {
        if let url, let pid { return BrokerTarget(url: url, pid: pid, launched: nil) }
        let launched = try BrokerLauncher(binary: broker.path, config: config)
        return BrokerTarget(url: launched.url, pid: launched.pid, launched: launched)
    }
}

/// The broker a scenario talks to.
struct BrokerTarget {
    let url: String
    let pid: Int32
    /// Set when the bench started the broker (and must stop it).
    let launched: BrokerLauncher?

    /// Stops the broker if the bench launched it.
    func finish() { launched?.stop() }
}
