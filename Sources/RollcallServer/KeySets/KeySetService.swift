import Logging
import RollcallCore
import RollcallEventLoop

/// The broker's JWK Sets on the service thread (PROTOCOL §3, 1.2): `auth.jwksFile`, read at
/// start and polled every second (``KeyFileWatcher``), and `auth.jwksUrl`, fetched at start
/// and every `auth.jwksRefreshSeconds` (``JWKSFetcher``). Each set that loads goes to the
/// broker through `deliver`; each failure is logged and counted, and the keys in force stay.
/// Service thread only.
final class KeySetService {
    /// The file, when `auth.jwksFile` is set.
    private(set) var fileWatcher: KeyFileWatcher?
    /// The URL, when `auth.jwksUrl` is set.
    private(set) var fetcher: JWKSFetcher?
    private var fileTimer: ServiceTimer?
    private let logger: Logger
    private let deliver: (JWKSetSource, JWKSet) -> Void
    /// Told once, with nil or why the broker cannot start, when the first fetch of the URL is
    /// over (``BrokerServer/start()`` waits for it).
    var firstFetchDone: ((ServerError?) -> Void)?

    /// Reads `auth.jwksFile` now (throwing, naming the key, when it cannot be used: the broker
    /// does not start) and prepares the fetcher of `auth.jwksUrl`. Nothing is fetched and
    /// nothing polled before ``start()``.
    init(auth: Configuration.Auth, context: OpaquePointer, logger: Logger,
         deliver: @escaping (JWKSetSource, JWKSet) -> Void) throws(ServerError) {
        self.logger = logger
        self.deliver = deliver
        if let path = auth.jwksFile {
            let (watcher, set) = try KeyFileWatcher.start(path: path)
            fileWatcher = watcher
            logger.info("\(watcher.tracker.describe(set))")
            deliver(.file, set)
            fileTimer = ServiceTimer(context: context) { [unowned self] in pollFile() }
        }
        if let text = auth.jwksUrl {
            let url: WebhookURL
            do throws(WebhookURLError) {
                url = try WebhookURL(text)
            } catch {
                throw ServerError(.keySetUnavailable, "auth.jwksUrl: \(error.message)")
            }
            fetcher = try JWKSFetcher(url: url, caFile: auth.jwksCaFile, refreshSeconds: auth.jwksRefreshSeconds,
                                      context: context) { [unowned self] outcome in
                fetched(outcome)
            }
        }
    }

    /// Starts polling the file and fetching the URL.
    func start() {
        fileTimer?.schedule(inMilliseconds: KeyFileWatcher.pollIntervalMs)
        fetcher?.start()
    }

    /// The service loop was woken from another thread (a name lookup may be done).
    func serviceWoken() {
        fetcher?.serviceWoken()
    }

    /// Stops every timer and fetch: call before the context is destroyed. A start still waiting
    /// for the first fetch is told it will not come.
    func stop() {
        fileTimer?.cancel()
        fileTimer = nil
        fetcher?.stop()
        if let told = firstFetchDone, let fetcher {
            firstFetchDone = nil
            told(ServerError(.keySetUnavailable, "auth.jwksUrl \(fetcher.url): the broker stopped before the key set was fetched"))
        }
    }

    /// What `/metrics` shows of each configured source.
    var metrics: [KeySetMetrics] {
        [fileWatcher?.tracker, fetcher?.tracker].compactMap { tracker in
            tracker.map { KeySetMetrics(source: $0.source, refreshes: $0.refreshes, failures: $0.failures, usableKeys: $0.usableKeys) }
        }
    }

    private func pollFile() {
        fileTimer?.schedule(inMilliseconds: KeyFileWatcher.pollIntervalMs)
        guard var watcher = fileWatcher, let outcome = watcher.poll() else { return }
        fileWatcher = watcher
        take(outcome, from: .file, describedBy: watcher.tracker)
    }

    private func fetched(_ outcome: KeySetTracker.Outcome) {
        guard let fetcher else { return }
        take(outcome, from: .url, describedBy: fetcher.tracker)
        if let told = firstFetchDone {
            firstFetchDone = nil
            if case .keep(let message) = outcome { told(ServerError(.keySetUnavailable, message)) } else { told(nil) }
        }
    }

    private func take(_ outcome: KeySetTracker.Outcome, from source: JWKSetSource, describedBy tracker: KeySetTracker) {
        switch outcome {
        case .use(let set, let changed):
            if changed {
                logger.info("\(tracker.describe(set))")
            } else {
                logger.debug("\(tracker.describe(set)) (unchanged)")
            }
            deliver(source, set)
        case .keep(let message):
            logger.error("\(message)")
        }
    }
}

/// What `/metrics` shows of one key set source.
struct KeySetMetrics: Equatable {
    let source: JWKSetSource
    /// Documents that replaced the keys.
    let refreshes: Int
    /// Reads, fetches or documents that failed.
    let failures: Int
    /// Usable keys of the set in force.
    let usableKeys: Int
}
