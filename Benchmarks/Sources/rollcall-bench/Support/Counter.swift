import Foundation

/// Thread-safe counters shared by the driver thread and client callbacks.
final class Counters: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Int] = [:]

    func add(_ name: String, _ delta: Int = 1) {
        lock.lock(); values[name, default: 0] += delta; lock.unlock()
    }

    subscript(name: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return values[name, default: 0]
    }

    var snapshot: [String: Int] {
        lock.lock(); defer { lock.unlock() }
        return values
    }
}
