/// The probes of PROTOCOL §1 (1.2).
///
/// - `/livez`: 200 `ok` whenever the service loop answers (``liveResponse``). It never looks at
///   Redis or storage: restarting a node does not bring Redis back, so a liveness probe that
///   failed on them would restart every node of a cluster during a Redis outage.
/// - `/readyz` (and `/healthz`, its alias): 200 `ok` while the server accepts connections and no
///   probe reports a failure; else 503 with a one-line body naming why (`shutting down` while
///   draining, then each probe's reason, separated by `; `).
///
/// Probes are plain closures run on the service thread at each request: storage or a cluster
/// link return a short reason while they are unhealthy, nil while fine.
public struct HealthCheck {
    /// A check run at each `/readyz`: nil when healthy, else why not (one short line).
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

    /// The reasons the server is not ready now (empty: ready).
    public func failures(accepting: Bool) -> [String] {
        (accepting ? [] : ["shutting down"]) + probes.compactMap { $0() }
    }

    /// The `/readyz` (and `/healthz`) answer: the reasons on one line.
    public func response(accepting: Bool) -> HTTPResponse {
        let reasons = failures(accepting: accepting)
        guard !reasons.isEmpty else { return .text(200, "ok") }
        let line = reasons.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") }.joined(separator: "; ")
        return .text(503, line + "\n")
    }

    /// The `/livez` answer: the loop that runs this is serving.
    public static let liveResponse = HTTPResponse.text(200, "ok")
}
