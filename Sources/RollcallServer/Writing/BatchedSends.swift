import CSendBatch
import Glibc

/// Frames for many connections (a broadcast's quiet recipients, the queues of a coalescing
/// flush), handed to the kernel in one io_uring submission instead of one `send` per
/// connection (docs/transport.md, "Batched sends").
///
/// On this machine a loopback `send` to a socket whose reader sleeps costs 5–10 µs, most of
/// it the receiving side's TCP work and the reader's wake-up, which the broker's thread pays
/// for. In a loop of `send`s the woken readers also preempt it at every return to user space;
/// inside one submission the 999 sends of a broadcast run back to back (BENCHMARKS.md,
/// Issue 16 §4, "Session 10"). Each request carries `MSG_DONTWAIT`, so it completes or fails
/// with EAGAIN during the submission: nothing is left in flight and no buffer outlives
/// ``send(_:)``.
///
/// The frames are built here, not by lws: an unmasked, unfragmented text frame (RFC 6455 §5.2),
/// which is what `lws_write(LWS_WRITE_TEXT)` sends for a connection with no extension and no
/// TLS — the only ones the broker adds (`BrokerServer.loneObjectToWriteDirectly`,
/// `BrokerServer.addWholeQueue`). Recipients of
/// one event share its bytes, so consecutive recipients of the same object share one frame.
final class BatchedSends {
    /// What became of one connection's frame.
    enum Outcome {
        /// The whole frame is with the socket.
        case sent
        /// The socket took only the first `sent` bytes of `frame` (0: none, EAGAIN): the rest
        /// must go through lws, which keeps what the socket will not take and sends it first.
        case partlySent(frame: UnsafeBufferPointer<UInt8>, sent: Int)
        /// The socket failed (`errno`): the connection must be dropped.
        case failed(errno: Int32)
    }

    /// Why io_uring cannot be used: the `errno` of the ring's creation.
    struct Unavailable: Error, CustomStringConvertible {
        let errno: Int32
        var description: String { "io_uring unavailable: \(String(cString: strerror(errno))) (errno \(errno))" }
    }

    /// Why a submission failed: the ring is unusable afterwards.
    struct RingFailed: Error, CustomStringConvertible {
        let errno: Int32
        var description: String { "io_uring submission failed: \(String(cString: strerror(errno))) (errno \(errno))" }
    }

    /// Requests per system call, and the most one batch holds (``isFull``).
    static let ringEntries: UInt32 = 1024
    /// The most frame bytes one batch holds (``isFull``): a flush of 15,000 connections would
    /// otherwise keep every frame at once, and the buffer would stay that large (the idle
    /// bench measured +0.9 KiB per session; BENCHMARKS.md, Issue 16 §4, "Session 10").
    static let frameBytesLimit = 256 * 1024
    /// The frame buffer's size: the limit plus room for the frame that crosses it. A larger
    /// frame grows the buffer for its own batch only.
    static let frameBufferBytes = frameBytesLimit + 64 * 1024

    private let ring: OpaquePointer
    private var frames: UnsafeMutablePointer<UInt8>
    private var framesCapacity: Int
    private var framesUsed = 0
    private var records: [ConnectionRecord] = []
    private var sockets: [Int32] = []
    private var frameOffsets: [Int] = []
    private var frameLengths: [UInt32] = []
    private var buffers: [UnsafePointer<UInt8>?] = []
    private var results: [Int32] = []
    /// The last object added and its frame, for the next recipient of the same event.
    private var lastObject: UnsafeRawPointer?
    private var lastFrame = (offset: 0, length: UInt32(0))
    /// ``firstUnfinishedSend()`` has said so.
    private var reportedUnfinished = false

    private init(ring: OpaquePointer) {
        self.ring = ring
        framesCapacity = Self.frameBufferBytes
        frames = .allocate(capacity: framesCapacity)
    }

    deinit {
        rollcall_send_batch_destroy(ring)
        frames.deallocate()
    }

    /// A ring, or why this kernel (or its seccomp filter) gives none.
    static func make() -> Result<BatchedSends, Unavailable> {
        var error: Int32 = 0
        guard let ring = rollcall_send_batch_create(ringEntries, &error) else { return .failure(Unavailable(errno: error)) }
        return .success(BatchedSends(ring: ring))
    }

    /// True once: the first time this kernel left a send in flight past its submission
    /// despite `MSG_DONTWAIT` (it was cancelled and reported as nothing sent, so lws sent
    /// the frame: correct, but slower). The 6.18 kernel this was built on honours the flag.
    func firstUnfinishedSend() -> Bool {
        guard !reportedUnfinished, rollcall_send_batch_unfinished(ring) > 0 else { return false }
        reportedUnfinished = true
        return true
    }

    /// Nothing added since the last ``send(_:)``.
    var isEmpty: Bool { records.isEmpty }

    /// The batch holds as many frames, or frame bytes, as one batch should: send it before
    /// adding more.
    var isFull: Bool { records.count >= Int(Self.ringEntries) || framesUsed >= Self.frameBytesLimit }

    /// Adds `object` as one text frame for `record`'s socket (the frame of the previous
    /// recipient when it was given the same object: a broadcast's event is encoded once).
    func add(_ record: ConnectionRecord, object: [UInt8], socket: Int32) {
        let identity = object.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        if identity == nil || identity != lastObject {
            lastFrame = appendFrame(payloadLength: object.count) { _ = object.copy(to: $0) }
            lastObject = identity
        }
        append(record, socket: socket, frame: lastFrame)
    }

    /// Adds a text frame of `payloadLength` bytes for `record`'s socket; `writePayload` writes
    /// exactly that many bytes at the address it is given.
    func add(_ record: ConnectionRecord, socket: Int32, payloadLength: Int,
             writePayload: (UnsafeMutablePointer<UInt8>) -> Void) {
        let frame = appendFrame(payloadLength: payloadLength, writePayload: writePayload)
        lastObject = nil
        append(record, socket: socket, frame: frame)
    }

    private func append(_ record: ConnectionRecord, socket: Int32, frame: (offset: Int, length: UInt32)) {
        records.append(record)
        sockets.append(socket)
        frameOffsets.append(frame.offset)
        frameLengths.append(frame.length)
    }

    /// Sends every frame added, then hands each connection's ``Outcome`` to `each`, in the
    /// order added, and forgets them. A frame's bytes are valid only during its `each`.
    /// Throws ``RingFailed`` after the outcomes when the ring broke (requests it did not
    /// take are reported as `partlySent(sent: 0)`): do not use it again.
    func send(_ each: (ConnectionRecord, Outcome) -> Void) throws(RingFailed) {
        defer { forget() }
        buffers.removeAll(keepingCapacity: true)
        for offset in frameOffsets { buffers.append(UnsafePointer(frames + offset)) }
        results.removeAll(keepingCapacity: true)
        results.append(contentsOf: repeatElement(0, count: records.count))
        let status = sockets.withUnsafeBufferPointer { sockets in
            buffers.withUnsafeBufferPointer { buffers in
                frameLengths.withUnsafeBufferPointer { lengths in
                    results.withUnsafeMutableBufferPointer { results in
                        rollcall_send_batch_run(ring, sockets.baseAddress, buffers.baseAddress, lengths.baseAddress,
                                                results.baseAddress, sockets.count)
                    }
                }
            }
        }
        for index in records.indices {
            let length = Int(frameLengths[index])
            let result = results[index]
            let frame = UnsafeBufferPointer(start: frames + frameOffsets[index], count: length)
            switch result {
            case Int32(length):
                each(records[index], .sent)
            case 0..<Int32(length):
                each(records[index], .partlySent(frame: frame, sent: Int(result)))
            case -EAGAIN, -ECANCELED:
                each(records[index], .partlySent(frame: frame, sent: 0))
            default:
                each(records[index], .failed(errno: -result))
            }
        }
        if status < 0 { throw RingFailed(errno: -status) }
    }

    private func forget() {
        records.removeAll(keepingCapacity: true)
        sockets.removeAll(keepingCapacity: true)
        frameOffsets.removeAll(keepingCapacity: true)
        frameLengths.removeAll(keepingCapacity: true)
        framesUsed = 0
        lastObject = nil
        if framesCapacity > Self.frameBufferBytes {
            frames.deallocate()
            framesCapacity = Self.frameBufferBytes
            frames = .allocate(capacity: framesCapacity)
        }
    }

    /// Writes a text frame after the frames already built; returns where it is.
    private func appendFrame(payloadLength: Int, writePayload: (UnsafeMutablePointer<UInt8>) -> Void) -> (offset: Int, length: UInt32) {
        let needed = framesUsed + Self.headerBytes(payloadLength) + payloadLength
        if needed > framesCapacity { grow(to: needed) }
        let offset = framesUsed
        writePayload(Self.writeHeader(payloadLength: payloadLength, at: frames + offset))
        framesUsed = needed
        return (offset, UInt32(needed - offset))
    }

    private func grow(to needed: Int) {
        let capacity = max(needed, framesCapacity * 2)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        larger.update(from: frames, count: framesUsed)
        frames.deallocate()
        frames = larger
        framesCapacity = capacity
    }

    /// The header of a final, unmasked text frame (RFC 6455 §5.2): 2, 4 or 10 bytes.
    static func headerBytes(_ payloadLength: Int) -> Int {
        payloadLength < 126 ? 2 : payloadLength < 65_536 ? 4 : 10
    }

    /// Writes that header at `at`; returns where the payload goes.
    static func writeHeader(payloadLength: Int, at: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        at[0] = 0x81 // FIN, text
        switch payloadLength {
        case ..<126:
            at[1] = UInt8(payloadLength)
            return at + 2
        case ..<65_536:
            at[1] = 126
            at[2] = UInt8(payloadLength >> 8)
            at[3] = UInt8(payloadLength & 0xFF)
            return at + 4
        default:
            at[1] = 127
            for byte in 0..<8 { at[2 + byte] = UInt8((UInt64(payloadLength) >> (56 - 8 * UInt64(byte))) & 0xFF) }
            return at + 10
        }
    }
}
