import CRollcallShim
import Foundation
import RollcallCore
import RollcallEventLoop

/// `auth.jwksUrl` (PROTOCOL §3, 1.2): a GET of the JWK Set at start and every
/// `auth.jwksRefreshSeconds`, with libwebsockets' HTTP client on the broker's own context and
/// service thread (a client vhost of its own, `rollcall-jwks`), so the service loop never
/// waits for the network. A host name is resolved on a short-lived thread first
/// (``BackgroundResolver``); an address literal is used as it is.
///
/// An attempt fails when the name does not resolve, the connection fails, the answer is not
/// `200` (redirects are not followed), the body is over ``maximumBytes``, or no complete
/// answer came within ``fetchTimeoutMs``. Then the keys in force stay (``KeySetTracker``
/// counts and words the failure) and the next attempt comes `jwksRefreshSeconds` later, like
/// after a success. Service thread only.
final class JWKSFetcher {
    /// The longest one fetch may take, from its start to the end of the body.
    static let fetchTimeoutMs: Int64 = 10_000
    /// The largest key set accepted (a JWK Set is a few kilobytes).
    static let maximumBytes = 1 << 20

    /// The URL fetched.
    let url: WebhookURL
    /// What it has done, for `/metrics` and the log.
    private(set) var tracker: KeySetTracker
    /// Called with the outcome of every attempt.
    private let deliver: (KeySetTracker.Outcome) -> Void
    private let refreshMs: Int64
    private let context: OpaquePointer
    private var vhost: OpaquePointer?
    private let protocols: UnsafeMutablePointer<lws_protocols>
    /// The C strings and protocol list the client vhost reads for its life.
    private let memory = ContextMemory()
    private let resolver: BackgroundResolver
    private var timer: ServiceTimer?
    private var attempt: Attempt?
    private var attempts: UInt64 = 0
    private var isStopped = false

    /// The fetch under way.
    private struct Attempt {
        let number: UInt64
        /// Monotonic ms by which it must be complete.
        let deadline: Int64
        var wsi: OpaquePointer?
        var body: [UInt8] = []
    }

    /// Creates the client vhost on `context` (service thread, once the context exists); an
    /// `https` URL's server is verified against `caFile` (PEM) when given, else the system's
    /// trust store. Nothing is fetched before ``start()``.
    init(url: WebhookURL, caFile: String?, refreshSeconds: Double, context: OpaquePointer,
         deliver: @escaping (KeySetTracker.Outcome) -> Void) throws(ServerError) {
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ServerError(.keySetUnavailable, "auth.jwksCaFile \(caFile) cannot be read")
        }
        self.url = url
        self.context = context
        self.deliver = deliver
        refreshMs = Int64((refreshSeconds * 1000).rounded())
        tracker = KeySetTracker(source: .url, location: url.description)
        resolver = BackgroundResolver { lws_cancel_service(context) }
        protocols = memory.protocols(count: 2)
        protocols[0].name = UnsafePointer(memory.cString("rollcall-jwks"))
        protocols[0].callback = rollcallJWKSCallback
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.vhost_name = UnsafePointer(memory.cString("rollcall-jwks"))
        info.protocols = UnsafePointer(protocols)
        if url.secure {
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            if let caFile { info.client_ssl_ca_filepath = UnsafePointer(memory.cString(caFile)) }
        }
        guard let created = lws_create_vhost(context, &info) else {
            throw ServerError(.keySetUnavailable, "auth.jwksUrl \(url): libwebsockets created no client vhost")
        }
        vhost = created
        timer = ServiceTimer(context: context) { [unowned self] in timerFired() }
    }

    /// The first fetch, now.
    func start() { fetch() }

    /// No more fetches or callbacks: call before the context is destroyed.
    func stop() {
        isStopped = true
        timer?.cancel()
        timer = nil
        resolver.stop()
        attempt = nil
    }

    /// The service loop was woken (`lws_cancel_service`): a name lookup may have finished.
    func serviceWoken() {
        for answer in resolver.takeAnswers() where attempt?.number == answer.ticket {
            guard let address = answer.address else {
                finish(failed: "the host \(url.host) does not resolve")
                continue
            }
            connect(to: address)
        }
    }

    // MARK: - One fetch

    private func fetch() {
        guard !isStopped, attempt == nil else { return }
        attempts += 1
        attempt = Attempt(number: attempts, deadline: MonotonicClock.now + Self.fetchTimeoutMs)
        timer?.schedule(inMilliseconds: Self.fetchTimeoutMs)
        if AddressResolver.isName(url.host) {
            resolver.resolve(url.host, ticket: attempts)
        } else {
            connect(to: url.host)
        }
    }

    private func connect(to address: String) {
        guard let number = attempt?.number else { return }
        if let wsi = HTTPClientConnect.open(context: context, vhost: vhost, address: address, url: url, method: "GET",
                                            protocolName: protocols[0].name, ticket: number) {
            if attempt?.number == number { attempt?.wsi = wsi }
        } else if attempt?.number == number {
            finish(failed: "cannot connect to \(url.hostHeader)")
        }
    }

    /// Ends the attempt: the tracker takes the body or the failure, the outcome goes to the
    /// broker's side, and the next fetch is `jwksRefreshSeconds` away.
    private func finish(_ result: Result<[UInt8], FetchFailure>) {
        guard attempt != nil else { return }
        attempt = nil
        let outcome: KeySetTracker.Outcome
        switch result {
        case .success(let body): outcome = tracker.received(body)
        case .failure(let failure): outcome = .keep(tracker.failed(failure.reason))
        }
        timer?.schedule(inMilliseconds: refreshMs)
        deliver(outcome)
    }

    private func timerFired() {
        guard !isStopped else { return }
        guard let current = attempt else { return fetch() }
        guard MonotonicClock.now >= current.deadline else {
            timer?.schedule(inMilliseconds: current.deadline - MonotonicClock.now)
            return
        }
        if let wsi = current.wsi { lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, rollcall_to_kill_async) }
        finish(failed: "no complete answer within \(Self.fetchTimeoutMs / 1000) s")
    }

    /// Why a fetch failed, in words.
    private struct FetchFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private func finish(failed reason: String) {
        finish(.failure(FetchFailure(reason)))
    }

    // MARK: - libwebsockets

    /// lws calls this for every event of the key set's client connection.
    func handleCallback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?,
                        _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP, LWS_CALLBACK_RECEIVE_CLIENT_HTTP, LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ,
             LWS_CALLBACK_COMPLETED_CLIENT_HTTP, LWS_CALLBACK_CLIENT_CONNECTION_ERROR, LWS_CALLBACK_CLOSED_CLIENT_HTTP:
            let number = UInt64(UInt(bitPattern: lws_get_opaque_user_data(wsi)))
            let isCurrent = !isStopped && number != 0 && attempt?.number == number
            return clientCallback(wsi, reason, input, length, isCurrent: isCurrent)
        default:
            // Vhost-wide reasons (protocol init, EVENT_WAIT_CANCELLED, …) come with a stand-in wsi.
            return 0
        }
    }

    private func clientCallback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?,
                                _ length: Int, isCurrent: Bool) -> Int32 {
        switch reason {
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
            guard isCurrent else { return -1 }
            let status = Int(lws_http_client_http_response(wsi))
            guard status == 200 else {
                finish(failed: "answered HTTP \(status), not 200")
                return -1
            }
            return 0
        case LWS_CALLBACK_RECEIVE_CLIENT_HTTP:
            return HTTPClientRead.readAvailable(wsi, chunkBytes: 4096)
        case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
            guard isCurrent, let input else { return -1 }
            attempt?.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
            if (attempt?.body.count ?? 0) > Self.maximumBytes {
                finish(failed: "its body is larger than \(Self.maximumBytes) bytes")
                return -1
            }
            return 0
        case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
            if isCurrent, let body = attempt?.body { finish(.success(body)) }
            return -1
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if isCurrent {
                let detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
                // OpenSSL's words for a refused certificate are cryptic: say what to look at.
                let hint = url.secure && detail.contains("SSL")
                    ? " (the TLS handshake failed: is the server's certificate signed by a CA in auth.jwksCaFile or the system's store, and does it name \(url.host)?)"
                    : ""
                finish(failed: "cannot fetch it: \(detail)\(hint)")
            }
            return 0
        case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
            if isCurrent { finish(failed: "the connection closed before the whole answer") }
            return 0
        default:
            return 0
        }
    }
}

/// The lws protocol callback of the key set client vhost: finds the server through the
/// context's user pointer and hands the event to its fetcher.
let rollcallJWKSCallback: @convention(c) (
    OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int
) -> Int32 = { wsi, reason, _, input, length in
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else { return 0 }
    let server = Unmanaged<BrokerServer>.fromOpaque(owner).takeUnretainedValue()
    guard let fetcher = server.services.keySets?.fetcher else { return 0 }
    return fetcher.handleCallback(wsi, reason, input, length)
}
