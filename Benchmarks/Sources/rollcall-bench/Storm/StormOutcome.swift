/// What one storm size measured.
struct StormOutcome {
    let plan: StormPlan
    /// Seconds to open and log in every session (before the storm; not in the CPU figure).
    var loginSeconds = 0.0
    var joinsOK = 0
    var joinsFailed = 0
    var leavesOK = 0
    var leavesFailed = 0
    /// Seconds from the first join to the last join / last leave request sent.
    var lastJoinAt = 0.0
    var lastLeaveAt = 0.0
    /// Remaining clients (not leavers) and how many hold the final roster at the end.
    var remainingClients = 0
    var finalClients = 0
    /// Seconds from the last join / last leave to the moment the last remaining client's
    /// roster became the final set; nil when some client never got there.
    var convergedAfterLastJoin: Double?
    var convergedAfterLastLeave: Double?
    /// When the rosters were not all final within the wait but were by the end of the quiet
    /// wait that follows: seconds from the last join to the last client's final roster.
    var lateConvergenceAfterLastJoin: Double?
    /// Broker side: seconds from the last join to when the broker handed its last frame of
    /// the storm to a socket (`rollcall_last_frame_written_timestamp_seconds`, read once
    /// the clients went quiet); nil when the broker does not export it.
    var brokerLastFrameAfterLastJoin: Double?
    /// Seconds waited after the last leave (when not converged: the whole bounded wait).
    var waited = 0.0
    /// Broker and bench CPU seconds from the first join to convergence (or the end of the wait).
    var brokerCPU = CPUTimes()
    var benchCPU = CPUTimes()
    /// Broker CPU seconds per second with every session logged in, before the storm.
    var idleCPUPerSecond = 0.0
    var brokerRSSKiB = 0
    /// Presence events as the clients counted them (raw event lines).
    var tallies = StormTallies()
    /// WebSocket frames and bytes the clients received from the first join to the end
    /// (`RollcallConnection.counters`, replies included; plain-socket clients: bytes read from
    /// the socket, i.e. what the broker sent them on the wire, compressed with deflate).
    var framesReceived = 0
    var bytesReceived = 0
    /// Compressed messages' bytes after inflating (permessage-deflate; 0 without it).
    var bytesInflated = 0
    /// Raw clients whose handshake negotiated permessage-deflate.
    var compressedClients = 0
    /// Connections that closed during the run.
    var disconnects = 0
    /// Disconnects by close code and reason (`close: 1013 …`, `close: none` for a drop).
    var closeReasons: [String: Int] = [:]
    /// `getOnlineUsers`, paged once quiet, equals the bench's final set.
    var onlineUsersMatch = false
    var onlineUsersCount = 0
    /// Distinct event and page lines scanned, and lines whose scan was reused from another
    /// client's identical line (``StormLineCache``).
    var linesScanned = 0
    var linesShared = 0
    /// `--check-shared-scans` ran (``StormTallies/scanCheckDifferences`` is meaningful).
    var checkedSharedScans = false
    /// Samples `[seconds since first join, joined, clients with the final roster]`.
    var timeline: [[Double]] = []
}
