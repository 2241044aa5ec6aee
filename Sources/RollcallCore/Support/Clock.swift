#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds since the Unix epoch, the broker's one unit of time.
public typealias Timestamp = Int64

/// Where the core reads the time. Injected so tests can advance time by hand.
///
/// Two readings, for two jobs:
/// - ``monotonic``: every deadline and duration (login timeouts, holds, interval flushes,
///   expiries, rate buckets). It never jumps, so an NTP step of the wall clock moves no timer.
/// - ``now``: the wall clock, only for the timestamps the protocol shows (`timestamp`,
///   `serverTime`, `lastUpdateTime`, `expiresAt`, …) and for checking token `exp`.
///
/// Durable expiries (a subscription's `expiresAt`, a custom status's expiry) are kept as wall
/// time, because they must survive a restart and monotonic time does not. The timer that
/// fires them is armed on the monotonic clock for the time that remains
/// (`monotonic + (expiresAt - now)`), computed when the expiry is set or loaded; once armed,
/// a wall-clock step no longer moves it.
public protocol BrokerClock: AnyObject {
    /// Wall time: milliseconds since the Unix epoch.
    var now: Timestamp { get }
    /// Monotonic time: milliseconds since an arbitrary start; never goes back or jumps.
    var monotonic: Timestamp { get }
    /// Monotonic time in nanoseconds (for measuring how long work takes).
    var monotonicNanoseconds: UInt64 { get }
}

/// The system's clocks: `CLOCK_REALTIME` for wall time, `CLOCK_MONOTONIC` for deadlines.
public final class SystemClock: BrokerClock {
    public init() {}

    public var now: Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(spec.tv_sec) * 1000 + Timestamp(spec.tv_nsec) / 1_000_000
    }

    public var monotonic: Timestamp { Timestamp(monotonicNanoseconds / 1_000_000) }

    public var monotonicNanoseconds: UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

/// A clock that only moves when told to. ``advance(byMilliseconds:)`` moves both readings
/// (time passes); ``stepWallClock(byMilliseconds:)`` moves only the wall clock, as an NTP
/// step or an operator's `date -s` would.
public final class ManualClock: BrokerClock {
    public private(set) var now: Timestamp
    public private(set) var monotonic: Timestamp
    public var monotonicNanoseconds: UInt64 { UInt64(monotonic) * 1_000_000 }

    /// Starts at `start` wall time (default: 2024-03-15T07:19:09.497Z) and monotonic
    /// `monotonicStart` (default 1,000,000 ms, far from the wall values so mixing them up shows).
    public init(start: Timestamp = 1_710_487_149_497, monotonicStart: Timestamp = 1_000_000) {
        now = start
        monotonic = monotonicStart
    }

    /// Time passes: both readings move forward.
    public func advance(byMilliseconds delta: Int64) {
        now += delta
        monotonic += delta
    }

    /// Time passes by seconds.
    public func advance(bySeconds delta: Double) { advance(byMilliseconds: Int64((delta * 1000).rounded())) }

    /// Only the wall clock jumps (forward or back); monotonic time does not move.
    func stepWallClock(byMilliseconds delta: Int64) { now += delta }
}

extension BrokerClock {
    /// The monotonic deadline for a wall-clock instant: the time that remains until it,
    /// counted from monotonic now (already past: now).
    func monotonicDeadline(forWallTime wall: Timestamp) -> Timestamp {
        monotonic + max(0, wall - now)
    }
}

extension Double {
    /// Seconds to milliseconds, rounded.
    @inlinable package var milliseconds: Int64 { Int64((self * 1000).rounded()) }
}
