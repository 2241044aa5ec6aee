#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds since the Unix epoch, the broker's one unit of time.
public typealias Timestamp = Int64

/// Where the core reads the time. Injected so tests can advance time by hand.
public protocol BrokerClock: AnyObject {
    /// Now, in milliseconds since the Unix epoch.
    var now: Timestamp { get }
}

/// The wall clock.
public final class SystemClock: BrokerClock {
    public init() {}
    public var now: Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(spec.tv_sec) * 1000 + Timestamp(spec.tv_nsec) / 1_000_000
    }
}

/// A clock that only moves when told to.
public final class ManualClock: BrokerClock {
    public private(set) var now: Timestamp
    /// Starts at `start` (default: 2024-03-15T07:19:09.497Z).
    public init(start: Timestamp = 1_710_487_149_497) { now = start }
    /// Moves the clock forward.
    public func advance(byMilliseconds delta: Int64) { now += delta }
    /// Moves the clock forward by seconds.
    public func advance(bySeconds delta: Double) { now += Int64((delta * 1000).rounded()) }
}

extension Double {
    /// Seconds to milliseconds, rounded.
    @inlinable var milliseconds: Int64 { Int64((self * 1000).rounded()) }
}
