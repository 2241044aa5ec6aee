#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock in Unix milliseconds, for figures other processes compare with their own
/// clock (`rollcall_last_frame_written_timestamp_milliseconds`). vDSO: no system call.
enum WallClock {
    static var milliseconds: Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
