#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds on the monotonic clock: the transport's heartbeats and timer arming
/// (the core keeps its own wall clock for protocol timestamps and deadlines).
package enum MonotonicClock {
    /// Now, in milliseconds since an arbitrary start.
    package static var now: Int64 { milliseconds(on: CLOCK_MONOTONIC) }

    /// Now, in seconds since the same start, to the nanosecond (write coalescing's busy test).
    package static var seconds: Double {
        let spec = reading(CLOCK_MONOTONIC)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }
}

/// The wall clock in Unix milliseconds, for figures other processes compare with their own
/// clock (`rollcall_last_frame_written_timestamp_seconds`). vDSO: no system call.
package enum WallClock {
    package static var milliseconds: Int64 { RollcallEventLoop.milliseconds(on: CLOCK_REALTIME) }
}

private func milliseconds(on clock: clockid_t) -> Int64 {
    let spec = reading(clock)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

private func reading(_ clock: clockid_t) -> timespec {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return spec
}
