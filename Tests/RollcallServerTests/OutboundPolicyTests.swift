@testable import RollcallServer
import RollcallTestSupport
import Testing

/// Issue 31: what counts toward `limits.maxOutboundBytes` (``OutboundPolicy``). The decisions
/// one by one, then properties over the whole range the configuration allows: the real policy
/// and the real ``OutboundQueue`` driven the way `BrokerServer` drives them (place after each
/// event, write frames of at most `maxBatchBytes` while the socket takes them, flush held
/// connections when the window ends, write again when the socket has room), over a model
/// socket with the broker's 64 KiB send buffer and an lws that keeps the unsent tail of a frame.
@Suite("OutboundPolicy")
struct OutboundPolicyTests {
    let policy = OutboundPolicy(maxOutboundBytes: 1000, maxBatchBytes: 100)

    func place(_ before: Int, _ after: Int, refusing: Bool = false, busy: Bool = false, awaited: Bool = false)
        -> OutboundPolicy.Placement {
        policy.placement(queuedBefore: before, queuedAfter: after, socketRefusesBytes: { refusing },
                         isBusy: { busy }, isAwaited: awaited)
    }

    @Test func aQuietConnectionIsWrittenAfterTheEventAndABusyOneWaitsUnlessAwaited() {
        #expect(place(0, 10) == .writeAfterEvent)
        #expect(place(0, 10, busy: true) == .holdForWindow)
        #expect(place(0, 10, busy: true, awaited: true) == .writeAtEndOfTurn)
        #expect(place(10, 20, busy: true) == .alreadyDue)
        #expect(place(10, 20, awaited: true) == .writeAtEndOfTurn)
    }

    @Test func aFullFrameGoesAtOnceAndALargeObjectNeverWaits() {
        #expect(place(0, 100, busy: true) == .writeAfterEvent, "an object of maxBatchBytes")
        #expect(place(0, 5000, busy: true) == .writeAfterEvent, "an object larger than the limit itself")
        #expect(place(90, 100, busy: true) == .writeAfterEvent, "the held objects now fill a frame")
        #expect(place(100, 110, busy: true) == .alreadyDue, "already written after this event")
    }

    @Test func onlyBytesTheSocketRefusedMakeASlowConsumer() {
        #expect(place(0, 5000, refusing: false) == .writeAfterEvent, "held back by the broker: not counted")
        #expect(place(990, 1001, refusing: false, busy: true) == .alreadyDue)
        #expect(place(990, 1000, refusing: true) == .alreadyDue, "at the limit")
        #expect(place(990, 1001, refusing: true) == .cutSlowConsumer, "one byte over, refused")
        var asked = false
        _ = policy.placement(queuedBefore: 0, queuedAfter: 10, socketRefusesBytes: { asked = true; return true },
                             isBusy: { false }, isAwaited: false)
        #expect(!asked, "the socket is asked (a poll) only when the queue is over the limit")
        #expect(!policy.isSlowConsumer(afterRefusedWriteLeaving: 1000))
        #expect(policy.isSlowConsumer(afterRefusedWriteLeaving: 1001))
    }

    /// A reader that reads everything the socket holds between two events, whatever the limits,
    /// the event sizes (up to `maxMessageBytes` and a reply's envelope), the window and the rate.
    @Test(arguments: 0..<400 as Range<UInt64>)
    func aReaderThatKeepsUpIsNeverCutAndGetsEverything(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var connection = ModelConnection(random: &random)
        let eventChance = Double.random(in: 0.02...1, using: &random)
        var produced = 0
        for _ in 0..<3000 {
            if Double.random(in: 0..<1, using: &random) < eventChance {
                connection.receive(size: Int.random(in: 1...33_000, using: &random),
                                   awaited: Bool.random(using: &random), now: connection.now)
                produced += 1
            }
            connection.endTurn()
            connection.reader(drains: .max)
            connection.advance(by: Double.random(in: 0.0001...0.005, using: &random))
            #expect(connection.checkHeldBackBound() == nil, "seed \(seed): \(connection.checkHeldBackBound() ?? "")")
            if connection.cut { break }
        }
        connection.quiesce()
        #expect(!connection.cut, "seed \(seed): \(connection)")
        #expect(connection.deliveredObjects == produced, "seed \(seed): \(connection.deliveredObjects) of \(produced)")
    }

    /// A reader that stops reading: cut once the bytes its socket refused pass the limit, and
    /// never holding more than the limit (plus the event that crossed it) while refusing.
    @Test(arguments: 0..<200 as Range<UInt64>)
    func aStalledReaderIsCutOnceItsRefusedBytesPassTheLimit(seed: UInt64) {
        var random = SplitMix64(seed: seed &+ 10_000)
        var connection = ModelConnection(random: &random)
        connection.maxOutboundBytesForStall()
        var steps = 0
        while !connection.cut && steps < 200_000 {
            let size = Int.random(in: 1...33_000, using: &random)
            connection.receive(size: size, awaited: Bool.random(using: &random), now: connection.now)
            connection.endTurn()
            connection.advance(by: Double.random(in: 0.0001...0.005, using: &random))
            if !connection.cut && connection.refusing {
                #expect(connection.queuedBytes <= connection.policy.maxOutboundBytes,
                        "seed \(seed): \(connection.queuedBytes) refused bytes kept")
            }
            if connection.cut {
                #expect(connection.backlogAtCut > connection.policy.maxOutboundBytes,
                        "seed \(seed): cut at \(connection.backlogAtCut) bytes")
            }
            steps += 1
        }
        #expect(connection.cut, "seed \(seed): never cut after \(steps) events (\(connection))")
    }
}

/// One connection as `BrokerServer` drives it (see the suite's comment), with the real
/// ``OutboundPolicy`` and ``OutboundQueue``, over a model socket: a kernel buffer of
/// ``socketCapacity`` bytes and an lws that takes every frame whole, keeping what the kernel
/// did not take as its tail and flushing it when the socket has room.
struct ModelConnection: CustomStringConvertible {
    private(set) var policy: OutboundPolicy
    let windowSeconds: Double
    let busySeconds: Double
    /// The broker caps each socket's send buffer at 64 KiB; Linux doubles the value.
    let socketCapacity = 128 * 1024

    private(set) var queue = OutboundQueue()
    private(set) var now = 0.0
    private(set) var cut = false
    private var lastFrameAt = -Double.infinity
    private var heldUntil: Double?
    private var writeAtEndOfTurn = false
    private var writableRequested = false
    private var inSocket = 0
    private var lwsTail = 0
    /// Sizes of the objects handed to lws, in order; the reader has read an object once the
    /// bytes it read cover it.
    private var handedOver: [Int] = []
    private var readBytes = 0
    private(set) var deliveredObjects = 0
    /// The bytes queued when the connection was cut.
    private(set) var backlogAtCut = 0

    init(random: inout SplitMix64) {
        let limits = [1, 2, 100, 512, 4096, 16384, 65536, 1 << 20, 4 << 20, 2_147_483_647]
        let maxOutbound = Bool.random(using: &random) ? limits.randomElement(using: &random)!
            : Int.random(in: 1...(8 << 20), using: &random)
        let maxBatch = Bool.random(using: &random) ? maxOutbound : Int.random(in: 1...min(maxOutbound, 1 << 22), using: &random)
        policy = OutboundPolicy(maxOutboundBytes: maxOutbound, maxBatchBytes: maxBatch)
        let window = [0, 0.001, 0.004, 0.02, 0.1].randomElement(using: &random)!
        windowSeconds = window
        busySeconds = window == 0 ? 0 : max(window, Double.random(in: 0.001...1, using: &random))
    }

    /// A stalled reader needs a limit it can pass in a bounded run.
    mutating func maxOutboundBytesForStall() {
        if policy.maxOutboundBytes > 16 << 20 {
            policy = OutboundPolicy(maxOutboundBytes: 16 << 20, maxBatchBytes: min(policy.maxBatchBytes, 16 << 20))
        }
    }

    var queuedBytes: Int { queue.byteCount }
    /// lws holds a tail, or the kernel's buffer is full.
    var refusing: Bool { lwsTail > 0 || inSocket >= socketCapacity }

    var description: String {
        "maxOutboundBytes \(policy.maxOutboundBytes), maxBatchBytes \(policy.maxBatchBytes), window \(windowSeconds), busy \(busySeconds); queued \(queue.byteCount), socket \(inSocket), tail \(lwsTail)"
    }

    /// The core queued an object of `size` bytes (one event's whole output for this connection).
    mutating func receive(size: Int, awaited: Bool, now: Double) {
        guard !cut else { return }
        let before = queue.byteCount
        queue.append([UInt8](repeating: 0x61, count: size))
        let coalescing = windowSeconds > 0
        let placement = policy.placement(
            queuedBefore: before, queuedAfter: queue.byteCount, socketRefusesBytes: { refusing },
            isBusy: { coalescing && now - lastFrameAt < busySeconds }, isAwaited: awaited)
        switch placement {
        case .writeAfterEvent: writeDirectly()
        case .writeAtEndOfTurn: if coalescing { writeAtEndOfTurn = true }
        case .holdForWindow: if heldUntil == nil { heldUntil = now + windowSeconds }
        case .alreadyDue: break
        case .cutSlowConsumer: cutNow()
        }
    }

    /// The end of a loop turn: the awaited writes, then the held ones once their window ended,
    /// then the writable callback when lws asked for it and the socket has room.
    mutating func endTurn() {
        if writeAtEndOfTurn { writeAtEndOfTurn = false; writeDirectly() }
        if let due = heldUntil, now >= due { heldUntil = nil; writeDirectly() }
        if writableRequested && inSocket < socketCapacity { writable() }
    }

    /// The reader takes up to `bytes` from the socket.
    mutating func reader(drains bytes: Int) {
        let taken = min(bytes, inSocket)
        inSocket -= taken
        readBytes += taken
        while let next = handedOver.first, readBytes >= next {
            readBytes -= next
            handedOver.removeFirst()
            deliveredObjects += 1
        }
    }

    mutating func advance(by seconds: Double) { now += seconds }

    /// Runs turns with a reader that reads everything until nothing is left anywhere.
    mutating func quiesce() {
        for _ in 0..<100_000 where !cut && (!queue.isEmpty || lwsTail > 0 || inSocket > 0 || !handedOver.isEmpty) {
            advance(by: max(windowSeconds, 0.001))
            endTurn()
            reader(drains: .max)
        }
    }

    /// What the broker may hold back on purpose while the socket takes bytes: less than a
    /// full frame, or a write is already due.
    func checkHeldBackBound() -> String? {
        guard !cut, !refusing, !writableRequested, !writeAtEndOfTurn else { return nil }
        return queue.byteCount < policy.maxBatchBytes || queue.isEmpty ? nil
            : "\(queue.byteCount) bytes held back with the socket taking bytes (\(self))"
    }

    private mutating func writeDirectly() {
        guard !queue.isEmpty else { return }
        if lwsTail > 0 { writableRequested = true; return }   // not safe: lws holds a tail
        writeQueue()
    }

    private mutating func writable() {
        writableRequested = false
        let flushed = min(lwsTail, socketCapacity - inSocket)
        lwsTail -= flushed
        inSocket += flushed
        if lwsTail > 0 { writableRequested = true; return }
        writeQueue()
    }

    /// `writeQueue`: frames of at most `maxBatchBytes` (a larger object alone) while the
    /// socket takes them; what it refused is checked against the limit.
    private mutating func writeQueue() {
        lastFrameAt = now
        while !queue.isEmpty {
            var length = 0
            repeat {
                let object = queue.removeFirst()
                let separator = length == 0 ? 0 : 1
                length += separator + object.count
                handedOver.append(separator + object.count)
            } while queue.first.map { length + 1 + $0.count <= policy.maxBatchBytes } == true
            let taken = min(length, socketCapacity - inSocket)
            inSocket += taken
            lwsTail += length - taken
            if queue.isEmpty { return }
            if refusing { break }
        }
        if policy.isSlowConsumer(afterRefusedWriteLeaving: queue.byteCount) { cutNow(); return }
        writableRequested = true
    }

    private mutating func cutNow() {
        cut = true
        backlogAtCut = queue.byteCount
        queue.removeAll()
    }
}
