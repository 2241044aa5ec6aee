import CRedisShim
import RollcallEventLoop

/// What a ``RedisLink`` reports to its owner, on the loop's thread, from hiredis' callbacks.
protocol RedisLinkDelegate: AnyObject {
    /// One reply (command replies in order; for a subscriber also pub/sub pushes).
    func link(_ link: RedisLink, received reply: RedisReply)
    /// The link is gone (refused, closed by Redis, reset). Called once; never after ``RedisLink/close()``.
    func link(_ link: RedisLink, failed error: RedisError)
}

/// One hiredis async context attached to the loop: the unit a connection replaces on every
/// reconnect, because hiredis never reuses a context after a disconnect.
///
/// Lifetime rules this type enforces:
/// - the context is never freed inside one of its own callbacks: ``close()`` from a callback
///   stops its watchers and frees it from a zero-delay timer on the next turn;
/// - when hiredis frees the context itself (connect refused, EOF, read error) the link only
///   forgets it, and stays alive (self-retained) until hiredis is done calling back.
final class RedisLink {
    weak var delegate: RedisLinkDelegate?
    /// The live context; nil once retired (by ``close()`` or by hiredis).
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// A context ``close()`` detached inside a callback, freed on the next turn.
    private var doomed: UnsafeMutablePointer<redisAsyncContext>?
    /// Keeps the link alive while hiredis may still call back into it.
    private var keepAlive: Unmanaged<RedisLink>?
    private var retirement: LoopTimer!
    /// This context's hiredis callbacks in progress (on the loop's thread).
    private var callbackDepth = 0

    /// Starts a non-blocking connect; throws ``RedisError/Code/connectFailed`` when it fails at once.
    init(endpoint: RedisEndpoint, loop: EventLoop) throws {
        retirement = LoopTimer(loop: loop) { [unowned self] in self.retire() }
        var error = [CChar](repeating: 0, count: 256)
        guard let context = rollcall_redis_connect(
            loop.loop, endpoint.host, Int32(endpoint.port), Unmanaged.passUnretained(self).toOpaque(),
            Self.onConnect, Self.onDisconnect, &error, error.count)
        else { throw RedisError(.connectFailed, "\(endpoint): \(String(cString: error))") }
        self.context = context
        keepAlive = Unmanaged.passRetained(self)
    }

    /// True until the link is closed or lost.
    var isOpen: Bool { context != nil }

    /// Queues one command (binary-safe arguments); false when the link is gone or hiredis
    /// refused it (nothing was queued then).
    @discardableResult
    func send(_ arguments: [[UInt8]]) -> Bool {
        guard let context, !arguments.isEmpty else { return false }
        return Self.withArgv(arguments) { count, argv, lengths in
            redisAsyncCommandArgv(context, Self.onReply, nil, count, argv, lengths) == REDIS_OK
        }
    }

    /// Retires the context (owner's decision: timeout, failed handshake, close). No delegate
    /// call follows. Safe inside a hiredis callback: the free is then deferred.
    func close() {
        guard let context else { return }
        self.context = nil
        rollcall_redis_quiesce(context)
        if callbackDepth == 0 {
            redisAsyncFree(context)
            keepAlive?.release()
            keepAlive = nil
        } else {
            doomed = context
            retirement.schedule(after: 0)
        }
    }

    /// Runs on the turn after a retirement: frees a doomed context, then lets the link go.
    private func retire() {
        if let doomed {
            self.doomed = nil
            redisAsyncFree(doomed)
        }
        keepAlive?.release()
        keepAlive = nil
    }

    /// hiredis is freeing `ac` on its own: forget it, tell the owner once.
    private func lost(_ ac: UnsafeRawPointer, _ error: RedisError) {
        if UnsafeRawPointer(doomed) == ac { doomed = nil }
        guard UnsafeRawPointer(context) == ac else { return }
        context = nil
        retirement.schedule(after: 0)
        delegate?.link(self, failed: error)
    }

    private func received(_ reply: UnsafeMutableRawPointer?, from ac: UnsafeMutablePointer<redisAsyncContext>) {
        guard ac == context else { return }
        guard let reply else {
            // hiredis runs pending callbacks with no reply only while freeing the context.
            lost(UnsafeRawPointer(ac), RedisError(.connectionLost, Self.reason(ac, otherwise: "connection closed")))
            return
        }
        delegate?.link(self, received: RedisReply(copying: reply.assumingMemoryBound(to: redisReply.self)))
    }

    private static func owner(_ ac: UnsafePointer<redisAsyncContext>) -> RedisLink? {
        guard let raw = rollcall_redis_owner(ac) else { return nil }
        return Unmanaged<RedisLink>.fromOpaque(raw).takeUnretainedValue()
    }

    private static func reason(_ ac: UnsafePointer<redisAsyncContext>, otherwise: String) -> String {
        guard ac.pointee.err != 0, let text = ac.pointee.errstr else { return otherwise }
        return String(cString: text)
    }

    private static let onReply: @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { ac, reply, _ in
        guard let ac, let link = owner(ac) else { return }
        link.callbackDepth += 1
        defer { link.callbackDepth -= 1 }
        link.received(reply, from: ac)
    }

    private static let onConnect: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { ac, status in
        guard let ac, status != REDIS_OK, let link = owner(ac) else { return }
        link.callbackDepth += 1
        defer { link.callbackDepth -= 1 }
        link.lost(UnsafeRawPointer(ac), RedisError(.connectFailed, reason(ac, otherwise: "connect failed")))
    }

    private static let onDisconnect: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { ac, _ in
        guard let ac, let link = owner(ac) else { return }
        link.callbackDepth += 1
        defer { link.callbackDepth -= 1 }
        link.lost(UnsafeRawPointer(ac), RedisError(.connectionLost, reason(ac, otherwise: "connection closed by Redis")))
    }

    /// Calls `body` with hiredis' argc/argv/argvlen view of `arguments` (one contiguous copy).
    private static func withArgv<Result>(
        _ arguments: [[UInt8]],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Result
    ) -> Result {
        var flat: [UInt8] = []
        flat.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        var offsets: [Int] = []
        offsets.reserveCapacity(arguments.count)
        for argument in arguments {
            offsets.append(flat.count)
            flat.append(contentsOf: argument)
        }
        flat.append(0)
        let lengths = arguments.map { $0.count }  // a closure: a key path here was looked up at run time on every command
        return flat.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { UnsafePointer(base + $0) }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { body(Int32(arguments.count), argv.baseAddress!, $0.baseAddress!) }
            }
        }
    }
}
