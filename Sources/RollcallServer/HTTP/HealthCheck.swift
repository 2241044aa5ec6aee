/// `/healthz`: 200 `ok` while the server accepts connections and no probe reports a
/// failure; else 503 with one reason per line (`shutting down` while draining, then each
/// probe's reason). Probes are plain closures run on the service thread at each request:
/// storage or a cluster link return a short reason while they are unhealthy, nil while fine.
public struct HealthCheck {
    /// A check run at each `/healthz`: nil when healthy, else why not (one short line).
    public typealias Probe = () -> String?

    private var probes: [Probe] = []

    /// A check with no probes (only the server's phase counts).
    public init(probes: [Probe] = []) {
        self.probes = probes
    }

    /// Adds a probe, run after the existing ones.
    public mutating func add(_ probe: @escaping Probe) {
        probes.append(probe)
    }

    /// The reasons the server is unhealthy now (empty: healthy).
    public func failures(accepting: Bool) -> [String] {
        (accepting ? [] : ["shutting down"]) + probes.compactMap { $0() }
    }

    /// The `/healthz` answer.
    public func response(accepting: Bool) -> HTTPResponse {
        let reasons = failures(accepting: accepting)
        return reasons.isEmpty ? .text(200, "ok") : .text(503, reasons.joined(separator: "\n") + "\n")
    }
}
