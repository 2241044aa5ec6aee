import Foundation

/// Gives the heap's free pages back to the kernel (glibc `malloc_trim(0)`) after a burst.
///
/// A burst (thousands of logins, snapshots, a write backlog that lws buffered) raises the
/// heap's high-water mark; once it is freed, glibc keeps most of those pages because live,
/// long-lived allocations (sessions, connection records) sit between them, so an idle broker
/// would keep the burst's RSS for ever. `malloc_trim(0)` releases every free page of every
/// arena (`madvise(MADV_DONTNEED)`), without moving anything.
///
/// Checked from the service loop at most every ``checkIntervalMs``. It trims when the broker
/// did enough since the last trim to leave garbage behind (bytes written, connections opened
/// or closed) and the burst is over (the last interval was quiet), or when a long burst has
/// gone on for ``forcedAfterBytes`` / ``forcedAfterChurn``; a quiet broker never pays for
/// it. A trim walks the free lists: about a millisecond per 100 MB of heap.
struct HeapTrimmer {
    /// Least time between two checks.
    static let checkIntervalMs: Int64 = 2_000
    /// Bytes written since the last trim that make one worth it once the burst is over.
    static let bytesOutThreshold = 1 << 20
    /// Connections opened or closed since the last trim that make one worth it once the burst is over.
    static let connectionChurnThreshold = 64
    /// A check interval with less than this written (and ``quietChurn`` connection changes) is quiet.
    static let quietBytes = 256 << 10
    static let quietChurn = 16
    /// Trim even in the middle of a burst after this much since the last trim.
    static let forcedAfterBytes = 256 << 20
    static let forcedAfterChurn = 4_096

    /// Running totals at a moment: bytes written, connections accepted, sockets open.
    private struct Mark {
        var bytesOut = 0
        var connectionsTotal = 0
        var open = 0

        /// Connections opened or closed between `self` and `later`.
        func churn(until later: Mark) -> Int {
            (later.connectionsTotal - connectionsTotal) + abs(later.open - open)
        }
    }

    private var nextCheckAt: Int64 = 0
    private var atLastTrim = Mark()
    private var atLastCheck = Mark()
    /// Number of trims done (for tests and logs).
    private(set) var trims = 0

    /// `malloc_trim` looked up at run time (it is glibc's, not in the Swift Glibc module); nil elsewhere.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// Trims when a check is due and the activity since the last trim calls for it:
    /// `bytesOut` and `connectionsTotal` are the transport's running totals, `open` the
    /// sockets open now.
    mutating func maybeTrim(now: Int64, bytesOut: Int, connectionsTotal: Int, open: Int) {
        guard now >= nextCheckAt else { return }
        nextCheckAt = now + Self.checkIntervalMs
        let current = Mark(bytesOut: bytesOut, connectionsTotal: connectionsTotal, open: open)
        let lastCheck = atLastCheck
        atLastCheck = current
        let bytesSinceTrim = bytesOut - atLastTrim.bytesOut
        let churnSinceTrim = atLastTrim.churn(until: current)
        let enough = bytesSinceTrim >= Self.bytesOutThreshold || churnSinceTrim >= Self.connectionChurnThreshold
        let quiet = bytesOut - lastCheck.bytesOut < Self.quietBytes && lastCheck.churn(until: current) < Self.quietChurn
        let forced = bytesSinceTrim >= Self.forcedAfterBytes || churnSinceTrim >= Self.forcedAfterChurn
        guard (enough && quiet) || forced, let trim = Self.mallocTrim else { return }
        _ = trim(0)
        trims += 1
        atLastTrim = current
    }
}
