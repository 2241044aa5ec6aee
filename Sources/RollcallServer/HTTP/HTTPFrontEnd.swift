import RollcallCore

/// HTTP on the broker's port, the part that is not lws: the routes (``HTTPRouter``), the
/// exchanges in progress (``HTTPExchanges``), `/readyz` (``HealthCheck``), `/metrics`
/// (``MetricsExposition``), the server API's keys and the two file trees (`http.staticDir`,
/// `http.adminDir`). Owned by the server on the service thread.
struct HTTPFrontEnd {
    /// `/metrics` and the histograms (one registry per server).
    let exposition = MetricsExposition()
    /// The server API's bearer keys (PROTOCOL §10).
    let apiKeys: ServerAPIKeys
    /// `http.staticDir` (`/` is `index.html`).
    let staticFiles: StaticFiles
    /// The operator's console (`http.adminDir`), served under ``AdminConsoleRoute/path``.
    let adminFiles: StaticFiles
    /// The routes; set once the server is initialized (they call back into it).
    var router: HTTPRouter!
    /// The requests in progress.
    var exchanges = HTTPExchanges()
    /// `/readyz`'s probes.
    var healthCheck = HealthCheck()

    init(configuration: Configuration, environment: [String: String]) {
        apiKeys = ServerAPIKeys(configuration.api, environment: environment)
        staticFiles = StaticFiles(directory: configuration.http.staticDir)
        adminFiles = StaticFiles(directory: configuration.http.adminDir)
    }
}
