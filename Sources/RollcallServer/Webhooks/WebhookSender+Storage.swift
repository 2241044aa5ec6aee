import Logging
import RollcallCore
import RollcallEventLoop
import RollcallRedisEngine
import RollcallStorage

/// Where stored webhook events live (PROTOCOL §11 1.2, "Nothing lost"): forgetting the ones
/// that left for good, and in cluster mode taking batches from the Redis stream.
extension WebhookSender {
    /// Stored events that left for good: storage forgets them.
    func settle(_ ids: [String]) {
        switch settings.storage {
        case .memory:
            break
        case .journal(let journal):
            do throws(StatusStoreError) { try journal.settle(ids) } catch { logStorageFailure("settled webhook events not deleted", error) }
        case .stream(let stream):
            stream.settle(ids) { [weak self] result in
                if case .failure(let error) = result { self?.logStorageFailure("settled webhook events not removed from Redis", error) }
            }
            // More may wait: the next turn at once (it runs after the settle, on the same link).
            nextPollAt = MonotonicClock.now
        }
    }

    /// Stream mode, at its poll time: touches the batch in flight, or takes the next one.
    func pollIfDue() {
        guard case .stream(let stream) = settings.storage, !isStopped, let due = nextPollAt else { return }
        let now = MonotonicClock.now
        guard now >= due else { return }
        nextPollAt = now + WebhookStream.pollMs(settings.webhooks)
        if let batch = machine.batch {
            stream.touch(batch.events.map(\.id)) { [weak self] length in
                guard let self, let length else { return }
                eventsInStream = length
            }
        } else if !taking, !draining, machine.isIdle {
            taking = true
            stream.take { [weak self] result in
                guard let self else { return }
                taking = false
                switch result {
                case .success(let turn):
                    eventsInStream = turn.inStream
                    submit(.taken(turn))
                case .failure(let error): logStorageFailure("webhook events not taken from Redis", error)
                }
            }
        }
        armTimer()
    }

    /// Logs a storage failure, at most once per 10 s (with how many were suppressed).
    func logStorageFailure(_ message: String, _ error: any Error) {
        guard let suppressed = storageLog.allow(now: MonotonicClock.now) else { return }
        logger.error("\(message)", metadata: ["error": "\(error)", "similarSuppressed": "\(suppressed)"])
    }
}

extension WebhookSender.Storage {
    /// For the log.
    var name: String {
        switch self {
        case .memory: "memory"
        case .journal(let journal): "sqlite \(journal.path)"
        case .stream: "redis stream"
        }
    }
}
