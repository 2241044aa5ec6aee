import RollcallCore

/// Admission control for one node's store calls on its command link (issue 29, the join
/// burst): at most ``maxCommandsInFlight`` commands are on the link at once; the rest wait in
/// the node, in order, and one that waited ``maxWaitSeconds`` without being sent is given up
/// (answered `UNAVAILABLE`, having changed nothing). So a burst of requests never queues
/// thousands of commands ahead of the node's heartbeat, and never keeps a command on the link
/// long enough for the Redis client's watchdog to take a healthy link down. Pure: the caller
/// passes the time and does the sending.
struct StoreCallGate {
    /// One store call waiting for room on the link.
    struct Call {
        let ticket: StoreTicket
        let commands: [StoreCommand]
        /// When it was handed to the link (loop seconds).
        let queuedAt: Double
    }

    /// What to do with the call at the head of the queue.
    enum Decision {
        /// Send it now (its commands count as in flight from here).
        case send(Call)
        /// It waited too long: answer it `UNAVAILABLE` without sending it.
        case giveUp(Call)
    }

    /// Commands on the link at most (a call larger than this is sent alone).
    let maxCommandsInFlight: Int
    /// How long a call may wait in the node before it is given up.
    let maxWaitSeconds: Double
    /// Commands sent and not yet answered.
    private(set) var commandsInFlight = 0
    private var waiting: [Call] = []
    private var head = 0

    init(maxCommandsInFlight: Int, maxWaitSeconds: Double) {
        self.maxCommandsInFlight = max(1, maxCommandsInFlight)
        self.maxWaitSeconds = maxWaitSeconds
    }

    /// Calls waiting in the node.
    var waitingCount: Int { waiting.count - head }

    /// When the oldest waiting call is given up, nil when none waits.
    var nextGiveUp: Double? { head < waiting.count ? waiting[head].queuedAt + maxWaitSeconds : nil }

    /// Queues `commands` for `ticket` (the link then asks ``next(now:)``).
    mutating func enqueue(_ ticket: StoreTicket, _ commands: [StoreCommand], now: Double) {
        waiting.append(Call(ticket: ticket, commands: commands, queuedAt: now))
    }

    /// The next thing to do at `now`, nil while the head must wait for room (or none waits).
    /// Calls are sent in the order they were queued; one given up never runs in Redis.
    mutating func next(now: Double) -> Decision? {
        guard head < waiting.count else { return nil }
        let call = waiting[head]
        if now - call.queuedAt >= maxWaitSeconds {
            pop()
            return .giveUp(call)
        }
        guard commandsInFlight == 0 || commandsInFlight + call.commands.count <= maxCommandsInFlight else { return nil }
        pop()
        commandsInFlight += call.commands.count
        return .send(call)
    }

    /// One command sent through ``next(now:)`` was answered (or failed).
    mutating func answered() {
        commandsInFlight = max(0, commandsInFlight - 1)
    }

    /// Empties the queue (the link closes); returns what waited.
    mutating func drain() -> [Call] {
        let left = Array(waiting[head...])
        waiting.removeAll()
        head = 0
        return left
    }

    private mutating func pop() {
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
    }
}
