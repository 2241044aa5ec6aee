import DequeModule
import RollcallCore

/// The webhook sender's policy as a pure state machine (PROTOCOL §11): batching, one batch
/// in flight, timeouts, retries with backoff, the bounded queue and the shutdown drain. It
/// does no I/O and reads no clock: every input carries the monotonic time in milliseconds,
/// and it answers with ``WebhookDeliveryAction``s that the lws glue (``WebhookSender``)
/// carries out. ``nextDeadline`` says when to call ``tick(now:)`` next.
///
/// - Events wait in a queue of at most `queueMaxEvents`; one more drops the oldest waiting
///   event (`overflow`). The batch in flight is not part of the queue (at most
///   `batchMaxEvents` more events are held).
/// - A batch is formed when none is in flight and the queue holds `batchMaxEvents` events or
///   its oldest event has waited `batchMaxDelaySeconds` (or at once while draining).
/// - An attempt succeeds on a 2xx answer. Anything else (another status, a connection error,
///   no answer within `timeoutSeconds`) fails it; the same batch (same id, same events) is
///   tried again after 0.5 s, 1 s, 2 s, … at most 30 s apart, as long as the retry would start
///   within `retryMaxSeconds` of the batch's first attempt; otherwise it is dropped
///   (`retriesExhausted`).
/// - *(1.2)* Events may come with ids fixed by durable storage (``enqueue(_:id:now:)``,
///   ``deliverNow(_:now:)``); a batch of such events is named after them
///   (`<first id>+<count>`), so it keeps its id wherever and whenever it is formed again.
///   Every event that leaves for good (acknowledged, dropped) is reported in a
///   ``WebhookDeliveryAction/settled(_:)`` so that storage forgets it.
struct WebhookDelivery {
    /// The limits, from `webhooks.*` (durations in milliseconds).
    struct Policy: Equatable {
        var batchMaxEvents: Int
        var batchMaxDelayMs: Int64
        var timeoutMs: Int64
        var retryMaxMs: Int64
        var queueMaxEvents: Int
        /// First retry delay; doubles up to ``maxRetryDelayMs``.
        var firstRetryDelayMs: Int64 = 500
        var maxRetryDelayMs: Int64 = 30_000

        /// The policy of a `webhooks` section.
        init(_ webhooks: Configuration.Webhooks) {
            batchMaxEvents = webhooks.batchMaxEvents
            batchMaxDelayMs = Int64((webhooks.batchMaxDelaySeconds * 1000).rounded())
            timeoutMs = max(1, Int64((webhooks.timeoutSeconds * 1000).rounded()))
            retryMaxMs = Int64((webhooks.retryMaxSeconds * 1000).rounded())
            queueMaxEvents = webhooks.queueMaxEvents
        }

        /// A policy from plain numbers (tests).
        init(batchMaxEvents: Int, batchMaxDelayMs: Int64, timeoutMs: Int64, retryMaxMs: Int64, queueMaxEvents: Int) {
            self.batchMaxEvents = batchMaxEvents
            self.batchMaxDelayMs = batchMaxDelayMs
            self.timeoutMs = timeoutMs
            self.retryMaxMs = retryMaxMs
            self.queueMaxEvents = queueMaxEvents
        }

        /// The delay before retry number `retry` (1 for the first retry).
        func retryDelay(_ retry: Int) -> Int64 {
            var delay = firstRetryDelayMs
            for _ in 1..<max(1, retry) {
                delay *= 2
                if delay >= maxRetryDelayMs { return maxRetryDelayMs }
            }
            return min(delay, maxRetryDelayMs)
        }
    }

    /// One waiting event: its id and its encoded object (without the id).
    struct QueuedEvent: Equatable {
        let id: String
        let bytes: [UInt8]
        /// Monotonic ms when it was queued.
        let queuedAt: Int64
        /// True when durable storage fixed the id (the batch is then named after its events).
        var isStored = false
    }

    /// The batch being delivered: same id and events on every attempt.
    struct Batch: Equatable {
        let id: String
        let events: [QueuedEvent]
        /// Monotonic ms of the first attempt.
        let firstAttemptAt: Int64
        /// Attempts started so far.
        var attempts: Int
    }

    /// Where the batch in flight stands.
    enum Phase: Equatable {
        /// No batch in flight.
        case idle
        /// Attempt `attempt` is under way; it fails at `deadline`.
        case sending(attempt: UInt64, deadline: Int64)
        /// The last attempt failed; the next starts at `retryAt`.
        case waitingToRetry(retryAt: Int64)
    }

    let policy: Policy
    private let idPrefix: String
    private(set) var queue = Deque<QueuedEvent>()
    private(set) var batch: Batch?
    private(set) var phase = Phase.idle
    /// True after ``drain(now:)``: batches go out without waiting for the delay.
    private(set) var draining = false
    private var nextEventNumber: UInt64 = 0
    private var nextBatchNumber: UInt64 = 0
    private var nextAttemptNumber: UInt64 = 0
    /// Totals, for `/metrics`.
    private(set) var counters = WebhookCounters()

    /// A machine with `policy`; ids are `<idPrefix>-e<n>` (events) and `<idPrefix>-b<n>` (batches).
    init(policy: Policy, idPrefix: String) {
        self.policy = policy
        self.idPrefix = idPrefix
    }

    /// Events waiting (not counting the batch in flight).
    var waitingEvents: Int { queue.count }

    /// True when nothing waits and nothing is in flight.
    var isIdle: Bool { queue.isEmpty && batch == nil }

    /// The earliest moment ``tick(now:)`` has something to do (monotonic ms), nil when none.
    var nextDeadline: Int64? {
        switch phase {
        case .sending(_, let deadline):
            return deadline
        case .waitingToRetry(let retryAt):
            return retryAt
        case .idle:
            guard let oldest = queue.first else { return nil }
            if draining || queue.count >= policy.batchMaxEvents { return oldest.queuedAt }
            return oldest.queuedAt + policy.batchMaxDelayMs
        }
    }

    // MARK: - Inputs

    /// Queues one event, with the id durable storage gave it (nil: one of the machine's own);
    /// drops the oldest waiting event when the queue is full.
    mutating func enqueue(_ bytes: [UInt8], id: String? = nil, now: Int64) -> [WebhookDeliveryAction] {
        var actions: [WebhookDeliveryAction] = []
        if queue.count >= policy.queueMaxEvents {
            let oldest = queue.removeFirst()
            counters.droppedOverflow += 1
            actions.append(.dropped(.overflow, events: 1))
            if oldest.isStored { actions.append(.settled([oldest.id])) }
        }
        queue.append(queued(bytes, id: id, now: now))
        counters.queued += 1
        actions += startBatchIfDue(now: now)
        return actions
    }

    /// Events that are due now, with the ids durable storage gave them (a cluster node's turn
    /// at the Redis stream): queued, and a batch starts at once if none is in flight.
    mutating func deliverNow(_ events: [(id: String, bytes: [UInt8])], now: Int64) -> [WebhookDeliveryAction] {
        for event in events {
            queue.append(QueuedEvent(id: event.id, bytes: event.bytes, queuedAt: now - policy.batchMaxDelayMs, isStored: true))
            counters.queued += 1
        }
        return startBatchIfDue(now: now)
    }

    /// `events` were dropped by durable storage, past `queueMaxEvents` (counted and logged here).
    mutating func droppedElsewhere(_ events: Int) -> [WebhookDeliveryAction] {
        guard events > 0 else { return [] }
        counters.droppedOverflow += events
        return [.dropped(.overflow, events: events)]
    }

    private mutating func queued(_ bytes: [UInt8], id: String?, now: Int64) -> QueuedEvent {
        if let id { return QueuedEvent(id: id, bytes: bytes, queuedAt: now, isStored: true) }
        nextEventNumber += 1
        return QueuedEvent(id: "\(idPrefix)-e\(nextEventNumber)", bytes: bytes, queuedAt: now)
    }

    /// Time passed: an attempt past its deadline fails, a retry or a batch that is due starts.
    mutating func tick(now: Int64) -> [WebhookDeliveryAction] {
        switch phase {
        case .sending(let attempt, let deadline) where now >= deadline:
            return [.abandon(attempt: attempt)] + attemptFailed(attempt, reason: .timedOut, now: now)
        case .waitingToRetry(let retryAt) where now >= retryAt:
            return startAttempt(now: now)
        case .idle:
            return startBatchIfDue(now: now)
        default:
            return []
        }
    }

    /// Attempt `attempt` got an HTTP answer with `status` (within its deadline).
    mutating func attemptAnswered(_ attempt: UInt64, status: Int, now: Int64) -> [WebhookDeliveryAction] {
        guard case .sending(let current, _) = phase, current == attempt else { return [] }
        guard (200...299).contains(status) else {
            return attemptFailed(attempt, reason: .status(status), now: now)
        }
        let delivered = batch?.events ?? []
        counters.deliveredBatches += 1
        counters.deliveredEvents += delivered.count
        batch = nil
        phase = .idle
        return Self.settling(delivered) + startBatchIfDue(now: now)
    }

    /// Attempt `attempt` ended without an answer (connection refused or cut, TLS failure…).
    mutating func attemptFailed(_ attempt: UInt64, reason: WebhookFailure, now: Int64) -> [WebhookDeliveryAction] {
        guard case .sending(let current, _) = phase, current == attempt, let failed = batch else { return [] }
        counters.failedAttempts += 1
        let retryAt = now + policy.retryDelay(failed.attempts)
        var actions: [WebhookDeliveryAction] = [.attemptFailed(batchId: failed.id, attempt: failed.attempts, reason: reason)]
        if retryAt - failed.firstAttemptAt > policy.retryMaxMs {
            counters.droppedRetriesExhausted += failed.events.count
            actions.append(.dropped(.retriesExhausted, events: failed.events.count))
            actions += Self.settling(failed.events)
            batch = nil
            phase = .idle
            actions += startBatchIfDue(now: now)
        } else {
            phase = .waitingToRetry(retryAt: retryAt)
        }
        return actions
    }

    /// Shutdown: from now on batches go out without waiting for `batchMaxDelaySeconds`.
    mutating func drain(now: Int64) -> [WebhookDeliveryAction] {
        draining = true
        return phase == .idle ? startBatchIfDue(now: now) : []
    }

    // MARK: - Batches

    private mutating func startBatchIfDue(now: Int64) -> [WebhookDeliveryAction] {
        guard phase == .idle, batch == nil, let oldest = queue.first else { return [] }
        let due = draining || queue.count >= policy.batchMaxEvents || now >= oldest.queuedAt + policy.batchMaxDelayMs
        guard due else { return [] }
        let count = min(policy.batchMaxEvents, queue.count)
        let events = Array(queue.prefix(count))
        queue.removeFirst(count)
        let id: String
        if let first = events.first, first.isStored {
            id = "\(first.id)+\(events.count)"
        } else {
            nextBatchNumber += 1
            id = "\(idPrefix)-b\(nextBatchNumber)"
        }
        batch = Batch(id: id, events: events, firstAttemptAt: now, attempts: 0)
        return startAttempt(now: now)
    }

    /// The `settled` action for the stored ones of `events` (none when none is stored).
    private static func settling(_ events: [QueuedEvent]) -> [WebhookDeliveryAction] {
        let ids = events.filter(\.isStored).map(\.id)
        return ids.isEmpty ? [] : [.settled(ids)]
    }

    private mutating func startAttempt(now: Int64) -> [WebhookDeliveryAction] {
        guard var current = batch else { return [] }
        current.attempts += 1
        batch = current
        nextAttemptNumber += 1
        phase = .sending(attempt: nextAttemptNumber, deadline: now + policy.timeoutMs)
        return [.post(attempt: nextAttemptNumber, batch: current)]
    }
}

/// What ``WebhookDelivery`` asks the transport to do.
enum WebhookDeliveryAction: Equatable {
    /// POST `batch` (signed now) as attempt number `attempt`; report its answer or failure.
    case post(attempt: UInt64, batch: WebhookDelivery.Batch)
    /// Give up attempt `attempt` (its deadline passed): close its connection, ignore its answer.
    case abandon(attempt: UInt64)
    /// An attempt of `batchId` failed (for the log); a retry or a drop follows.
    case attemptFailed(batchId: String, attempt: Int, reason: WebhookFailure)
    /// `events` events were dropped for `reason` (for the log and `/metrics`).
    case dropped(WebhookDropReason, events: Int)
    /// *(1.2)* The stored events `ids` left for good (acknowledged or dropped): durable
    /// storage forgets them.
    case settled([String])
}

/// Why an attempt failed.
enum WebhookFailure: Equatable, CustomStringConvertible {
    /// The receiver answered with a status outside 200-299.
    case status(Int)
    /// No answer within `timeoutSeconds`.
    case timedOut
    /// The connection could not be made or ended before an answer.
    case connection(String)

    var description: String {
        switch self {
        case .status(let status): "HTTP \(status)"
        case .timedOut: "no answer in time"
        case .connection(let detail): "connection failed: \(detail)"
        }
    }
}

/// Why events were dropped; the raw values are the `reason` label in `/metrics`.
enum WebhookDropReason: String, Equatable, CaseIterable {
    /// The queue held `queueMaxEvents` waiting events.
    case overflow
    /// The batch failed for `retryMaxSeconds`.
    case retriesExhausted
}

/// Webhook totals since start.
struct WebhookCounters: Equatable {
    /// Events accepted into the queue.
    var queued = 0
    /// Batches and events acknowledged with a 2xx.
    var deliveredBatches = 0
    var deliveredEvents = 0
    /// Attempts that failed (each retry counts).
    var failedAttempts = 0
    /// Events dropped, by reason.
    var droppedOverflow = 0
    var droppedRetriesExhausted = 0
}
