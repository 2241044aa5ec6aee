import RollcallCore

/// Admission control for one node's store calls on its command link (issue 29, the join
/// burst): at most ``maxCommandsInFlight`` commands are on the link at once; the rest wait in
/// the node, and one that waited ``maxWaitSeconds`` without being sent is given up (answered
/// `UNAVAILABLE`, having changed nothing). So a burst of requests never queues thousands of
/// commands ahead of the node's heartbeat, and never keeps a command on the link long enough
/// for the Redis client's watchdog to take a healthy link down.
///
/// Two lanes (``StoreCallPriority``): a call made for a client's request goes before every
/// waiting background call (the reaper's, the scanner's passes over every key group), and a
/// background call is sent only while no request waits. Before (one lane, in order), a request
/// queued behind a pass of 1024 `session.reapGroup` scripts, sent again at every tick while a
/// master refused them, waited past the client's timeout (chaos on Redis Cluster in CI, stops
/// 47 and 48). Each lane keeps its own order. Upkeep is not starved either: once the head of
/// the background lane has waited half of ``maxWaitSeconds``, it and the requests take turns
/// (one each), so on a node whose request lane never empties the overdue-flush scan that
/// PROTOCOL §9's interval bound relies on still goes out, and requests keep at least every
/// other send. Pure: the caller passes the time and does the sending.
struct StoreCallGate {
    /// One store call waiting for room on the link.
    struct Call {
        let ticket: StoreTicket
        let commands: [StoreCommand]
        /// When it was handed to the link (loop seconds).
        let queuedAt: Double
    }

    /// What to do with the call at the head of a lane.
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
    private var requests = Lane()
    private var background = Lane()
    /// Whether the last call sent was upkeep that went ahead of waiting requests (its turn).
    private var lastSentWasUpkeepsTurn = false

    init(maxCommandsInFlight: Int, maxWaitSeconds: Double) {
        self.maxCommandsInFlight = max(1, maxCommandsInFlight)
        self.maxWaitSeconds = maxWaitSeconds
    }

    /// Calls waiting in the node.
    var waitingCount: Int { requests.count + background.count }

    /// When the oldest waiting call is given up, nil when none waits.
    var nextGiveUp: Double? {
        let oldest: Double? = switch (requests.first?.queuedAt, background.first?.queuedAt) {
        case (let request?, let upkeep?): min(request, upkeep)
        case (let one, let other): one ?? other
        }
        return oldest.map { $0 + maxWaitSeconds }
    }

    /// Queues `commands` for `ticket` at the end of its lane (the link then asks ``next(now:)``).
    mutating func enqueue(_ ticket: StoreTicket, _ commands: [StoreCommand], priority: StoreCallPriority = .request, now: Double) {
        let call = Call(ticket: ticket, commands: commands, queuedAt: now)
        switch priority {
        case .request: requests.append(call)
        case .background: background.append(call)
        }
    }

    /// The next thing to do at `now`, nil while the head must wait for room (or none waits).
    /// A call that waited too long is given up first (either lane); then the head of the
    /// request lane is sent when there is room, and the background lane's only when no request
    /// waits, or when its head waited half of ``maxWaitSeconds`` and the last call sent was a
    /// request (turns). One given up never runs in Redis.
    mutating func next(now: Double) -> Decision? {
        if let call = requests.first, now - call.queuedAt >= maxWaitSeconds { return .giveUp(requests.pop()) }
        if let call = background.first, now - call.queuedAt >= maxWaitSeconds { return .giveUp(background.pop()) }
        if let call = requests.first, !isUpkeepsTurn(now: now) {
            guard hasRoom(for: call) else { return nil }
            lastSentWasUpkeepsTurn = false
            return send(requests.pop())
        }
        guard let call = background.first, hasRoom(for: call) else { return nil }
        lastSentWasUpkeepsTurn = !requests.isEmpty
        return send(background.pop())
    }

    /// Upkeep goes before a waiting request: its head waited half the give-up time and the last
    /// call sent was not upkeep's turn already.
    private func isUpkeepsTurn(now: Double) -> Bool {
        guard let upkeep = background.first, !lastSentWasUpkeepsTurn else { return false }
        return now - upkeep.queuedAt >= maxWaitSeconds / 2
    }

    /// One command sent through ``next(now:)`` was answered (or failed).
    mutating func answered() {
        commandsInFlight = max(0, commandsInFlight - 1)
    }

    /// Empties both lanes (the link closes); returns what waited, requests first.
    mutating func drain() -> [Call] {
        requests.drain() + background.drain()
    }

    private func hasRoom(for call: Call) -> Bool {
        commandsInFlight == 0 || commandsInFlight + call.commands.count <= maxCommandsInFlight
    }

    private mutating func send(_ call: Call) -> Decision {
        commandsInFlight += call.commands.count
        return .send(call)
    }

    /// Calls in the order they were queued, taken from the front without moving the rest.
    private struct Lane {
        private var waiting: [Call] = []
        private var head = 0

        var count: Int { waiting.count - head }
        var isEmpty: Bool { head == waiting.count }
        var first: Call? { head < waiting.count ? waiting[head] : nil }

        mutating func append(_ call: Call) { waiting.append(call) }

        mutating func pop() -> Call {
            let call = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return call
        }

        mutating func drain() -> [Call] {
            let left = Array(waiting[head...])
            waiting.removeAll()
            head = 0
            return left
        }
    }
}
