import Foundation
import RollcallEventLoop
import RollcallRedis

extension EventLoop {
    /// Turns the loop until `condition` holds or `timeout` seconds pass; true when it held.
    /// A 10 ms timer keeps each turn short, so the condition is checked even when the loop
    /// has nothing else to do.
    @discardableResult
    public func run(until condition: () -> Bool, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let tick = LoopTimer(loop: self) {}
        defer { tick.cancel() }
        while !condition() {
            guard Date() < deadline else { return false }
            tick.schedule(after: 0.01)
            runOnce()
        }
        return true
    }

    /// A new libev loop with no lws context, for code that only needs the loop; destroyed
    /// after `body` (which must release everything it put on the loop).
    public static func withTestLoop<Result>(_ body: (EventLoop) throws -> Result) throws -> Result {
        guard let loop = EventLoop() else { throw TestSupportError("libev could not be loaded") }
        defer { loop.destroy() }
        return try body(loop)
    }
}
