import RollcallEventLoop

/// Where the server is in its life.
enum ServerPhase: Equatable {
    /// Serving; `/healthz` answers 200.
    case accepting
    /// Shutdown requested: close frames sent, waiting for connections to go until `deadline`
    /// (monotonic ms). Upgrades are refused, `/healthz` answers 503.
    case draining(deadline: Int64)
    /// The service loop is over; the context is being destroyed.
    case stopped
}

/// The service thread's loop: the lws context and the libev loop it runs on, the phase, the
/// one timer, the heartbeat rule, the heap trimmer and the context's C memory.
struct ServiceLoop {
    /// The lws context (nil before it is created and once it is destroyed).
    var context: OpaquePointer?
    /// The epoll loop lws runs on (see ``EventLoop``); nil: lws' poll loop (`ROLLCALL_EVENT_LOOP=poll`,
    /// or libev could not be loaded).
    var eventLoop: EventLoop?
    var phase = ServerPhase.accepting
    var timer = DeadlineTimer()
    let heartbeat: HeartbeatPolicy
    /// Returns freed heap pages to the kernel after bursts (see ``HeapTrimmer``).
    var heapTrimmer = HeapTrimmer()
    let memory = ContextMemory()

    init(heartbeat: HeartbeatPolicy) {
        self.heartbeat = heartbeat
    }

    /// The grace deadline while draining (nil otherwise).
    var drainDeadline: Int64? {
        if case .draining(let deadline) = phase { deadline } else { nil }
    }
}
