#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds on the monotonic clock: the transport's heartbeats and timer arming
/// (the core keeps its own wall clock for protocol timestamps and deadlines).
enum MonotonicClock {
    /// Now, in milliseconds since an arbitrary start.
    static var now: Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
