import DequeModule
import Foundation

/// What a reader's buffer does when the reader falls `limit` elements behind. The session never
/// waits for a reader: a slow one only affects itself.
public enum BufferPolicy: Sendable, Equatable {
    /// Keep at most `limit` undelivered elements; one more ends the reader's sequence with
    /// ``RollcallError/slowReader(limit:)`` after the elements it holds (nothing is dropped
    /// silently). For event streams, where every element matters.
    case endReader(limit: Int)
    /// Keep the newest `limit` undelivered elements, dropping the oldest. For streams whose
    /// latest element says everything (connection states, roster updates: each carries the
    /// whole roster, and counts the updates skipped before it).
    case keepNewest(limit: Int)

    var limit: Int {
        switch self {
        case .endReader(let limit), .keepNewest(let limit): max(1, limit)
        }
    }
}

/// Hands every element to every reader subscribed at the time (multicast). Each reader has its
/// own bounded buffer (``BufferPolicy``); readers are dropped when their sequence is released
/// or its task is cancelled.
final class Broadcast<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var readers: [ObjectIdentifier: WeakReader<Element>] = [:]
    private var finished = false
    /// Marks an element with the number of elements dropped just before it (``BufferPolicy/keepNewest(limit:)``).
    private let markSkipped: (@Sendable (inout Element, Int) -> Void)?

    init(markSkipped: (@Sendable (inout Element, Int) -> Void)? = nil) {
        self.markSkipped = markSkipped
    }

    /// A new reader that receives every element from now on.
    func subscribe(_ policy: BufferPolicy) -> ReaderBuffer<Element> {
        let reader = ReaderBuffer<Element>(policy: policy, markSkipped: markSkipped)
        let alreadyFinished = lock.withLock { () -> Bool in
            if finished { return true }
            readers[ObjectIdentifier(reader)] = WeakReader(reader)
            return false
        }
        if alreadyFinished { reader.finish(nil) }
        return reader
    }

    /// Number of readers alive.
    var readerCount: Int {
        lock.withLock {
            readers = readers.filter { $0.value.reader != nil }
            return readers.count
        }
    }

    /// Hands `element` to every reader.
    func yield(_ element: Element) {
        let current = lock.withLock { () -> [ReaderBuffer<Element>] in
            var alive: [ReaderBuffer<Element>] = []
            for (key, weak) in readers {
                if let reader = weak.reader { alive.append(reader) } else { readers[key] = nil }
            }
            return alive
        }
        for reader in current { reader.push(element) }
    }

    /// Ends every reader (after what they hold) and every later subscription.
    func finish() {
        let current = lock.withLock { () -> [ReaderBuffer<Element>] in
            finished = true
            defer { readers.removeAll() }
            return readers.values.compactMap(\.reader)
        }
        for reader in current { reader.finish(nil) }
    }
}

private struct WeakReader<Element: Sendable> {
    weak var reader: ReaderBuffer<Element>?
    init(_ reader: ReaderBuffer<Element>) { self.reader = reader }
}

/// One reader's bounded buffer and the task waiting on it.
final class ReaderBuffer<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private let policy: BufferPolicy
    private let markSkipped: (@Sendable (inout Element, Int) -> Void)?
    private var buffer = Deque<Element>()
    private var skipped = 0
    private var waiter: CheckedContinuation<Result<Element?, RollcallError>, Never>?
    /// Set once the reader ends: nil for a normal end, the error for an overflow.
    private var end: RollcallError??

    init(policy: BufferPolicy, markSkipped: (@Sendable (inout Element, Int) -> Void)?) {
        self.policy = policy
        self.markSkipped = markSkipped
    }

    /// Elements waiting to be read.
    var pending: Int { lock.withLock { buffer.count } }

    func push(_ element: Element) {
        lock.lock()
        guard end == nil else { lock.unlock(); return }
        if let waiter {
            self.waiter = nil
            var element = element
            if skipped > 0 { markSkipped?(&element, skipped); skipped = 0 }
            lock.unlock()
            waiter.resume(returning: .success(element))
            return
        }
        if buffer.count >= policy.limit {
            switch policy {
            case .endReader(let limit):
                end = .some(.slowReader(limit: limit))
                lock.unlock()
                return
            case .keepNewest:
                buffer.removeFirst()
                skipped += 1
            }
        }
        buffer.append(element)
        lock.unlock()
    }

    func finish(_ error: RollcallError?) {
        lock.lock()
        guard end == nil else { lock.unlock(); return }
        end = .some(error)
        let waiter = self.waiter
        self.waiter = nil
        lock.unlock()
        waiter?.resume(returning: error.map { .failure($0) } ?? .success(nil))
    }

    /// The next element; nil at the end; the overflow error once the buffer is read out.
    func next() async -> Result<Element?, RollcallError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Element?, RollcallError>, Never>) in
                lock.lock()
                if var element = buffer.popFirst() {
                    if skipped > 0 {
                        // The first element kept after the dropped ones says how many went.
                        markSkipped?(&element, skipped)
                        skipped = 0
                    }
                    lock.unlock()
                    continuation.resume(returning: .success(element))
                } else if let end {
                    lock.unlock()
                    continuation.resume(returning: end.map { .failure($0) } ?? .success(nil))
                } else if Task.isCancelled {
                    lock.unlock()
                    continuation.resume(returning: .success(nil))
                } else {
                    waiter = continuation
                    lock.unlock()
                }
            }
        } onCancel: {
            finish(nil)
        }
    }
}
