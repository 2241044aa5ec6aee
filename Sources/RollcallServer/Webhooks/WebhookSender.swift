import CRollcallShim
import Foundation
import Logging
import RollcallCore
import RollcallEventLoop
import RollcallRedisEngine
import RollcallStorage

/// Delivers webhook batches (PROTOCOL §11) with libwebsockets' own HTTP client, on the
/// broker's lws context and service thread: no thread of its own, nothing blocks.
///
/// The policy (batching, one batch in flight, timeouts, retries, the bounded queue) is the
/// pure ``WebhookDelivery``; this class only carries out its actions:
/// - `.post`: signs the batch now (`sentAt`, `Rollcall-Signature`) and opens a client
///   connection on its own vhost (`rollcall-webhooks`, no listener) with
///   `lws_client_connect_via_info`, method POST. Headers go in at
///   `LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER` (with `lws_client_http_body_pending`), the
///   body in chunks at `LWS_CALLBACK_CLIENT_HTTP_WRITEABLE`, and the status comes back at
///   `LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP` (`lws_http_client_http_response`). Connection
///   errors and closes before an answer fail the attempt.
/// - `.abandon`: kills the attempt's connection (its deadline passed).
/// One lws timer (``nextDeadline``) drives ``WebhookDelivery/tick(now:)``.
///
/// *(1.2)* Where events wait until a 2xx (``Storage``, PROTOCOL §11 "Nothing lost"): in memory;
/// in `storage.path` (``SQLiteWebhookJournal``: each event the core produces is committed before
/// it is queued, and what a previous run left is queued at start); or, in cluster mode, in the
/// cluster's Redis stream, written by the scripts themselves (``WebhookStream``): the sender
/// then takes one batch at a time from the stream, every ``WebhookStream/pollMs(_:)``, and
/// touches the batch in flight at each poll so that no other node takes it over.
///
/// Service thread only.
final class WebhookSender {
    /// What it is given at start.
    struct Settings {
        var webhooks: Configuration.Webhooks
        var url: WebhookURL
        /// `webhooks.secret` (or `secretEnv`'s value), then `webhooks.secrets`: one `v1=` each.
        var secrets: [String]
        var node: String
        /// Where events wait until a 2xx.
        var storage: Storage = .memory
    }

    /// Where events wait until a 2xx acknowledges them.
    enum Storage {
        /// In memory (`storage.path` null): lost with the process.
        case memory
        /// One node with `storage.path`: committed to SQLite before they are queued.
        case journal(SQLiteWebhookJournal)
        /// Cluster mode: the Redis stream the scripts write.
        case stream(WebhookStream)
    }

    var machine: WebhookDelivery
    let settings: Settings
    let logger: Logger
    private let context: OpaquePointer
    private var vhost: OpaquePointer?
    /// The client vhost's protocol list and strings.
    private let memory = ContextMemory()
    /// The client protocol's name (each POST names it).
    private let protocolName: UnsafePointer<CChar>
    /// The address connected to (the host resolved once at start when it is a name).
    private let connectAddress: String
    /// Armed for the machine's next deadline.
    private var timer = DeadlineTimer()
    /// The POST under way (nil between attempts).
    private var attempt: Attempt?
    private var inputs: [Input] = []
    private var isHandling = false
    /// Set by ``stop()``.
    var isStopped = false
    private var dropLog = RateLimitedLog(intervalMs: 10_000)
    private var failureLog = RateLimitedLog(intervalMs: 10_000)
    var storageLog = RateLimitedLog(intervalMs: 10_000)
    /// Journal mode: events of the current inbound event, committed by ``commitStored()``.
    private var toStore: [[UInt8]] = []
    /// Stream mode: when (monotonic ms) to look at the stream next; a turn under way; set on drain.
    var nextPollAt: Int64?
    /// Cluster mode: the stream's length at this node's latest turn or touch.
    var eventsInStream = 0
    var taking = false
    var draining = false

    /// Body bytes written per writable callback.
    static let bodyChunkBytes = 16 * 1024
    /// Bytes of the answer's body read (and dropped) at a time.
    static let answerChunkBytes = 1024
    /// Seconds a connection may linger after its answer was read (draining the answer's body).
    static let lingerSeconds: Int32 = 2

    private struct Attempt {
        let number: UInt64
        let batchId: String
        let body: [UInt8]
        let signature: String
        var wsi: OpaquePointer?
        var written = 0
        var bodySent = false
    }

    enum Input {
        case event([UInt8], id: String?)
        case tick
        case answered(UInt64, status: Int)
        case failed(UInt64, String)
        case drain
        /// Stream mode: what a turn at the stream found.
        case taken(WebhookStream.Turn)
        /// Journal mode: events a previous run left, with their ids.
        case restored([SQLiteWebhookJournal.Event])
    }

    /// Creates the client vhost on `context` (service thread, after the context exists).
    init(settings: Settings, context: OpaquePointer, logger: Logger) throws(ServerError) {
        self.settings = settings
        self.context = context
        self.logger = logger
        machine = WebhookDelivery(policy: WebhookDelivery.Policy(settings.webhooks), idPrefix: Self.randomPrefix())
        connectAddress = AddressResolver.numericAddress(for: settings.url.host) ?? settings.url.host
        if let caFile = settings.webhooks.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ServerError(.webhookSetupFailed, "webhooks.caFile \(caFile) cannot be read")
        }
        protocolName = UnsafePointer(memory.cString("rollcall-webhook"))
        let protocols = memory.protocols(count: 2)
        protocols[0].name = protocolName
        protocols[0].callback = rollcallWebhookCallback
        protocols[0].per_session_data_size = 0
        protocols[0].rx_buffer_size = 0

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.vhost_name = UnsafePointer(keep("rollcall-webhooks"))
        info.protocols = UnsafePointer(protocols)
        if settings.url.secure {
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            if let caFile = settings.webhooks.caFile { info.client_ssl_ca_filepath = UnsafePointer(keep(caFile)) }
        }
        guard let created = lws_create_vhost(context, &info) else {
            throw ServerError(.webhookSetupFailed, "libwebsockets created no client vhost for webhooks.url \(settings.url)")
        }
        vhost = created
        timer.attach(ServiceTimer(context: context) { [unowned self] in timerFired() })
        if connectAddress == settings.url.host, AddressResolver.isName(settings.url.host) {
            logger.warning("webhooks.url host \(settings.url.host) did not resolve at start; libwebsockets resolves it at each POST (synchronously)")
        }
        logger.info("webhooks on", metadata: ["url": "\(settings.url)", "node": "\(settings.node)",
                                              "events": "\(settings.webhooks.events.joined(separator: ","))",
                                              "storage": "\(settings.storage.name)"])
        switch settings.storage {
        case .memory:
            break
        case .journal(let journal):
            do throws(StatusStoreError) {
                let left = try journal.unsettled()
                if !left.isEmpty {
                    logger.info("webhook events from the previous run queued", metadata: ["events": "\(left.count)", "path": "\(journal.path)"])
                    submit(.restored(left))
                }
            } catch {
                throw ServerError(.webhookSetupFailed, "\(error)")
            }
        case .stream:
            nextPollAt = MonotonicClock.now
            armTimer()
        }
    }

    // MARK: - Inputs from the server

    /// A core event for the backend. In journal mode it waits for ``commitStored()``, which
    /// the server calls before it writes anything the same inbound event produced.
    func enqueue(_ event: BackendEvent) {
        guard case .journal = settings.storage else { return submit(.event(event.bytes, id: nil)) }
        toStore.append(event.bytes)
    }

    /// Journal mode: commits the events enqueued since the last call in one transaction, then
    /// queues them with their ids (kept in memory only, and logged, if the commit failed).
    func commitStored() {
        guard case .journal(let journal) = settings.storage, !toStore.isEmpty else { return }
        let events = toStore
        toStore.removeAll(keepingCapacity: true)
        var ids: [String?] = Array(repeating: nil, count: events.count)
        do throws(StatusStoreError) {
            ids = try journal.append(events)
        } catch {
            logStorageFailure("webhook events kept in memory only: storage failed", error)
        }
        for (bytes, id) in zip(events, ids) { submit(.event(bytes, id: id)) }
    }

    /// Shutdown: send what waits at once (in stream mode, no new batch is taken: what waits in
    /// Redis is for the other nodes).
    func drain() {
        draining = true
        submit(.drain)
    }

    /// True when nothing waits and nothing is in flight.
    var isIdle: Bool { machine.isIdle && !taking }

    /// Totals and the queue length, for `/metrics`.
    var counters: WebhookCounters { machine.counters }
    var waitingEvents: Int {
        guard case .stream = settings.storage else { return machine.waitingEvents }
        // Cluster mode: the events wait in the Redis stream, for whichever node takes them.
        return max(0, eventsInStream - (machine.batch?.events.count ?? 0))
    }

    /// Stops the timer and ignores every later callback (the context is about to be
    /// destroyed, closing any connection still open: no retry may start then).
    func stop() {
        isStopped = true
        timer.detach()
    }

    /// The timer fired.
    func timerFired() {
        timer.fired()
        submit(.tick)
        pollIfDue()
    }

    // MARK: - Driving the machine

    /// Feeds the machine one input at a time: inputs that arrive while actions are carried
    /// out (a connect that fails at once) wait their turn, so the machine is never re-entered.
    func submit(_ input: Input) {
        guard !isStopped else { return }
        inputs.append(input)
        guard !isHandling else { return }
        isHandling = true
        var index = 0
        while index < inputs.count {
            let next = inputs[index]
            index += 1
            let now = MonotonicClock.now
            let actions: [WebhookDeliveryAction]
            switch next {
            case .event(let bytes, let id): actions = machine.enqueue(bytes, id: id, now: now)
            case .restored(let events):
                actions = events.flatMap { machine.enqueue($0.bytes, id: $0.id, now: now) }
            case .taken(let turn):
                actions = machine.droppedElsewhere(turn.dropped) + machine.deliverNow(turn.events.map { ($0.id, $0.bytes) }, now: now)
                if let due = turn.nextDueMs { nextPollAt = min(nextPollAt ?? .max, now + due) }
                if !turn.events.isEmpty, machine.isIdle { nextPollAt = now }
            case .tick: actions = machine.tick(now: now)
            case .answered(let number, let status): actions = machine.attemptAnswered(number, status: status, now: now)
            case .failed(let number, let detail): actions = machine.attemptFailed(number, reason: .connection(detail), now: now)
            case .drain: actions = machine.drain(now: now)
            }
            for action in actions { perform(action) }
        }
        inputs.removeAll(keepingCapacity: true)
        isHandling = false
        armTimer()
    }

    private func perform(_ action: WebhookDeliveryAction) {
        switch action {
        case .post(let number, let batch):
            post(batch, attempt: number)
        case .abandon(let number):
            guard let current = attempt, current.number == number else { return }
            attempt = nil
            if let wsi = current.wsi { lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, rollcall_to_kill_async) }
        case .attemptFailed(let batchId, let number, let reason):
            if let suppressed = failureLog.allow(now: MonotonicClock.now) {
                logger.warning("webhook delivery failed; retrying", metadata: [
                    "batch": "\(batchId)", "attempt": "\(number)", "reason": "\(reason)",
                    "url": "\(settings.url)", "similarSuppressed": "\(suppressed)",
                ])
            }
        case .settled(let ids):
            settle(ids)
        case .dropped(let reason, let events):
            if let suppressed = dropLog.allow(now: MonotonicClock.now) {
                let counters = machine.counters
                logger.error("webhook events dropped", metadata: [
                    "reason": "\(reason.rawValue)", "events": "\(events)", "similarSuppressed": "\(suppressed)",
                    "droppedOverflowTotal": "\(counters.droppedOverflow)",
                    "droppedRetriesExhaustedTotal": "\(counters.droppedRetriesExhausted)",
                ])
            }
        }
    }

    func armTimer() {
        let deadline = [machine.nextDeadline, nextPollAt].compactMap { $0 }.min()
        timer.arm(at: deadline, now: MonotonicClock.now)
    }

    // MARK: - One POST

    private func post(_ batch: WebhookDelivery.Batch, attempt number: UInt64) {
        let sentAt = Int64(Date().timeIntervalSince1970 * 1000)
        let body = WebhookBatchBody.encode(batch, sentAt: sentAt, node: settings.node)
        let signature = WebhookSignature.header(secrets: settings.secrets, sentAt: sentAt, body: body)
        attempt = Attempt(number: number, batchId: batch.id, body: body, signature: signature)
        let url = settings.url
        if let wsi = HTTPClientConnect.open(context: context, vhost: vhost, address: connectAddress, url: url, method: "POST",
                                            protocolName: protocolName, ticket: number) {
            if attempt?.number == number { attempt?.wsi = wsi }
        } else if attempt?.number == number {
            attempt = nil
            submit(.failed(number, "cannot connect to \(url.hostHeader)"))
        }
    }

    /// lws calls this for every event of a webhook client connection.
    func handleCallback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?,
                        _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER, LWS_CALLBACK_CLIENT_HTTP_WRITEABLE,
             LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP, LWS_CALLBACK_RECEIVE_CLIENT_HTTP, LWS_CALLBACK_COMPLETED_CLIENT_HTTP,
             LWS_CALLBACK_CLIENT_CONNECTION_ERROR, LWS_CALLBACK_CLOSED_CLIENT_HTTP, LWS_CALLBACK_WSI_DESTROY:
            guard !isStopped else { return reason == LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER ? -1 : 0 }
            let number = UInt64(UInt(bitPattern: lws_get_opaque_user_data(wsi)))
            return clientCallback(wsi, reason, input, length, attempt: number, isCurrent: number != 0 && attempt?.number == number)
        default:
            // Vhost-wide reasons (protocol init, EVENT_WAIT_CANCELLED, …) come with a stand-in wsi.
            return 0
        }
    }

    /// One event of a webhook client connection, for attempt `number`.
    private func clientCallback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?,
                                _ length: Int, attempt number: UInt64, isCurrent: Bool) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            guard isCurrent, let current = attempt, let input else { return -1 }
            attempt?.wsi = wsi
            let appended = current.signature.withCString { signature in
                rollcall_webhook_append_headers(input, length, signature, current.body.count)
            }
            guard appended == 0 else { return -1 }
            lws_client_http_body_pending(wsi, 1)
            lws_callback_on_writable(wsi)
            return 0
        case LWS_CALLBACK_CLIENT_HTTP_WRITEABLE:
            guard isCurrent else { return 0 }
            return writeBody(wsi)
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
            guard isCurrent else { return 0 }
            let status = Int(lws_http_client_http_response(wsi))
            attempt = nil
            lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, Self.lingerSeconds)
            submit(.answered(number, status: status))
            return 0
        case LWS_CALLBACK_RECEIVE_CLIENT_HTTP:
            return HTTPClientRead.readAvailable(wsi, chunkBytes: Self.answerChunkBytes)
        case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
            return -1
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if isCurrent {
                attempt = nil
                let detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
                submit(.failed(number, detail))
            }
            return 0
        case LWS_CALLBACK_CLOSED_CLIENT_HTTP, LWS_CALLBACK_WSI_DESTROY:
            if isCurrent, attempt?.wsi == nil || attempt?.wsi == wsi {
                attempt = nil
                submit(.failed(number, "the connection closed before an answer"))
            }
            return 0
        default:
            return 0
        }
    }

    /// Writes the next chunk of the body; the last one with `LWS_WRITE_HTTP_FINAL`. Once it is
    /// all out, one more writable callback extends lws' own wait for the answer (the context's
    /// `timeout_secs`) to `webhooks.timeoutSeconds`: the delivery deadline is the machine's.
    private func writeBody(_ wsi: OpaquePointer) -> Int32 {
        guard var current = attempt else { return 0 }
        if current.bodySent {
            let seconds = Int32(min(3600, settings.webhooks.timeoutSeconds.rounded(.up))) + 1
            lws_set_timeout(wsi, PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE, seconds)
            return 0
        }
        let count = min(Self.bodyChunkBytes, current.body.count - current.written)
        let isLast = current.written + count == current.body.count
        let pre = Int(rollcall_lws_pre)
        var buffer = [UInt8](repeating: 0, count: pre + count)
        buffer.withUnsafeMutableBufferPointer { target in
            current.body.withUnsafeBufferPointer { source in
                (target.baseAddress! + pre).update(from: source.baseAddress! + current.written, count: count)
            }
        }
        if isLast { lws_client_http_body_pending(wsi, 0) }
        let written = buffer.withUnsafeMutableBufferPointer { target in
            lws_write(wsi, target.baseAddress! + pre, count, isLast ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
        }
        guard written >= 0 else { return -1 }
        current.written += count
        current.bodySent = isLast
        attempt = current
        lws_callback_on_writable(wsi)
        return 0
    }

    // MARK: - Helpers

    private func keep(_ text: String) -> UnsafeMutablePointer<CChar> {
        memory.cString(text)
    }

    /// 12 random hex digits: event and batch ids start with it, so ids stay unique across restarts.
    private static func randomPrefix() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() & 0xFFFF_FFFF_FFFF
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 12 - hex.count) + hex
    }
}

/// The lws protocol callback of the webhook vhost: finds the server through the context's
/// user pointer and hands the event to its sender.
let rollcallWebhookCallback: @convention(c) (
    OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int
) -> Int32 = { wsi, reason, _, input, length in
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else { return 0 }
    let server = Unmanaged<BrokerServer>.fromOpaque(owner).takeUnretainedValue()
    guard let sender = server.services.webhookSender else { return 0 }
    return sender.handleCallback(wsi, reason, input, length)
}
