import CRedisShim
import RollcallEventLoop

/// What a ``RedisLink`` reports to its owner, on the loop's thread.
protocol RedisLinkDelegate: AnyObject {
    /// One reply (command replies in order; for a subscriber also pub/sub pushes).
    func link(_ link: RedisLink, received reply: RedisReply)
    /// The link is gone (refused, closed by Redis, reset, a certificate that does not verify).
    /// Called once; never after ``RedisLink/close()``.
    func link(_ link: RedisLink, failed error: RedisError)
}

/// One connection to Redis on the loop, plain or TLS (the C transport in `CRedisShim`: a
/// non-blocking socket, OpenSSL, one libev watcher; hiredis formats and parses only): the unit
/// a client replaces on every reconnect.
///
/// Lifetime rules this type enforces:
/// - the C link is never freed inside one of its own callbacks (the transport defers the free
///   until the callback returns);
/// - the link stays alive (self-retained) while the transport may call back into it, and
///   lets go on the loop's next turn when it is closed inside a callback.
final class RedisLink {
    weak var delegate: RedisLinkDelegate?
    /// The live transport; nil once closed or failed.
    private var transport: OpaquePointer?
    /// Keeps the link alive while the transport may still call back into it.
    private var keepAlive: Unmanaged<RedisLink>?
    private var retirement: LoopTimer!
    /// Callbacks in progress (on the loop's thread).
    private var callbackDepth = 0

    /// Starts a non-blocking connect to `endpoint` (a numeric address) with TLS when `tls` is
    /// given; throws ``RedisError/Code/connectFailed`` when it fails at once.
    init(endpoint: RedisEndpoint, loop: EventLoop, tls: RedisTLSContext.Link? = nil) throws {
        retirement = LoopTimer(loop: loop) { [unowned self] in self.retire() }
        var error = [CChar](repeating: 0, count: 256)
        let opened: OpaquePointer? = withOptionalCString(tls?.serverName) { serverName in
            rollcall_link_open(
                loop.loop, endpoint.host, Int32(endpoint.port), tls?.context.pointer, serverName,
                Unmanaged.passUnretained(self).toOpaque(), Self.onReply, Self.onFailed, &error, error.count)
        }
        guard let opened else { throw RedisError(.connectFailed, "\(endpoint): \(String(cString: error))") }
        transport = opened
        keepAlive = Unmanaged.passRetained(self)
    }

    /// True until the link is closed or lost.
    var isOpen: Bool { transport != nil }

    /// Queues one command (binary-safe arguments), written on the loop's next turn with the
    /// others of this turn; false when the link is gone (nothing was queued then).
    @discardableResult
    func send(_ arguments: [[UInt8]]) -> Bool {
        guard let transport, !arguments.isEmpty else { return false }
        return Self.withArgv(arguments) { count, argv, lengths in
            rollcall_link_send(transport, count, argv, lengths) == 0
        }
    }

    /// Closes the link (owner's decision: timeout, failed handshake, close). No delegate call
    /// follows. Safe inside a callback.
    func close() {
        guard let transport else { return }
        self.transport = nil
        rollcall_link_close(transport)
        letGo()
    }

    /// Releases the self-retain now, or on the next turn when inside a callback.
    private func letGo() {
        if callbackDepth == 0 {
            retire()
        } else {
            retirement.schedule(after: 0)
        }
    }

    private func retire() {
        keepAlive?.release()
        keepAlive = nil
    }

    private static func owner(_ raw: UnsafeMutableRawPointer?) -> RedisLink? {
        guard let raw else { return nil }
        return Unmanaged<RedisLink>.fromOpaque(raw).takeUnretainedValue()
    }

    private static let onReply: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<redisReply>?) -> Void = { raw, reply in
        guard let link = owner(raw), let reply, link.transport != nil else { return }
        link.callbackDepth += 1
        defer { link.callbackDepth -= 1 }
        link.delegate?.link(link, received: RedisReply(copying: reply))
    }

    private static let onFailed: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = { raw, code, message in
        guard let link = owner(raw), let transport = link.transport else { return }
        link.callbackDepth += 1
        defer { link.callbackDepth -= 1 }
        link.transport = nil
        rollcall_link_close(transport)
        link.letGo()
        let text = message.map { String(cString: $0) } ?? "connection closed"
        link.delegate?.link(link, failed: RedisError(RedisLink.code(of: code), text))
    }

    private static func code(of failure: Int32) -> RedisError.Code {
        switch UInt32(failure) {
        case ROLLCALL_LINK_CONNECT_FAILED.rawValue: .connectFailed
        case ROLLCALL_LINK_TLS_VERIFY_FAILED.rawValue: .tlsVerifyFailed
        case ROLLCALL_LINK_TLS_HANDSHAKE_FAILED.rawValue: .tlsHandshakeFailed
        case ROLLCALL_LINK_PROTOCOL_ERROR.rawValue: .protocolViolation
        default: .connectionLost
        }
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

/// `body` with a C string of `text`, or NULL.
private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
