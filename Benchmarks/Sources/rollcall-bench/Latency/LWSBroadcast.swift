import CLibWebSockets
import CRollcallShim
import Foundation

/// What one frame write costs through libwebsockets: the "raw lws broadcast to N sockets" of
/// issue 16 §4. An lws server in the bench's process (its own context and service thread, on
/// 127.0.0.1) accepts `count` WebSocket connections from plain client sockets, with the
/// broker's 64 KiB send buffers. A round writes the probe's event (``RawBroadcast/probeEventPayload``,
/// framed by lws) to every connection with `lws_write`, one after another, from the service thread and
/// outside the writable callback — the broker's direct write with nothing of the broker.
/// ``DrainThreads`` read the clients' sockets, as many threads as read the members.
///
/// ``RawBroadcast`` is the same broadcast with plain `write` calls: the kernel's share alone.
final class LWSBroadcast: @unchecked Sendable {
    private var context: OpaquePointer?
    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolName: UnsafeMutablePointer<CChar>
    private let interface: UnsafeMutablePointer<CChar>
    private var clients: [RawWebSocket] = []
    private var drain: DrainThreads?
    private let payloadLength: Int
    private let buffer: UnsafeMutablePointer<UInt8>
    private let serviceEnded = DispatchSemaphore(value: 0)
    private let roundEnded = DispatchSemaphore(value: 0)
    // Shared between the service thread and the caller, under `lock`.
    private let lock = NSLock()
    private var stopping = false
    private var roundAsked = false
    private var lastRoundMicros = Double.nan
    private var establishedCount = 0
    // The service thread's own.
    private var connections: [OpaquePointer] = []

    /// Starts the server and connects `count` clients read by `readerThreads` threads; nil when
    /// the context, a connection or the handshakes failed.
    init?(sockets count: Int, readerThreads: Int) {
        let payload = RawBroadcast.probeEventPayload
        payloadLength = payload.count
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: rollcall_lws_pre + payload.count)
        (buffer + rollcall_lws_pre).initialize(from: payload, count: payload.count)
        self.buffer = buffer
        protocolName = strdup("rollcall-floor")
        interface = strdup("127.0.0.1")
        protocols = .allocate(capacity: 2)
        var proto = lws_protocols()
        proto.name = UnsafePointer(protocolName)
        proto.callback = lwsBroadcastCallback
        proto.rx_buffer_size = 4096
        protocols.initialize(to: proto)
        (protocols + 1).initialize(to: lws_protocols())
        guard start(count, readerThreads: readerThreads) else {
            close()
            return nil
        }
    }

    deinit {
        close()
        buffer.deallocate()
        protocols.deallocate()
        free(protocolName)
        free(interface)
    }

    private func start(_ count: Int, readerThreads: Int) -> Bool {
        var info = lws_context_creation_info()
        info.port = 0  // a free port, read back below
        info.iface = UnsafePointer(interface)
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.count_threads = 1
        info.fd_limit_per_thread = UInt32(count + 64)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        guard let context = lws_create_context(&info), let vhost = lws_get_vhost_by_name(context, "default") else { return false }
        self.context = context
        let port = Int(lws_get_vhost_listen_port(vhost))
        Thread { [self] in self.serviceLoop() }.start()
        let drain = DrainThreads(count: readerThreads)
        self.drain = drain
        for _ in 0..<count {
            guard let client = try? RawWebSocket(port: port, path: "/", subprotocol: "rollcall-floor") else { return false }
            clients.append(client)
        }
        // Every handshake answered; wait (bounded) until the server side has them all too.
        let deadline = MonotonicSeconds.now + 10
        while lock.withLock({ establishedCount }) < count {
            guard MonotonicSeconds.now < deadline else { return false }
            usleep(1000)
        }
        for client in clients { drain.add(client.fd) }
        return true
    }

    /// One broadcast of the frame to every connection; µs per write (the service thread's time
    /// from the first `lws_write` to the end of the last, ÷ connections).
    func round() -> Double {
        guard let context else { return .nan }
        lock.withLock { roundAsked = true }
        lws_cancel_service(context)
        guard roundEnded.wait(timeout: .now() + 5) == .success else { return .nan }
        return lock.withLock { lastRoundMicros }
    }

    /// Stops the service thread (which closes the connections) and the readers. Idempotent.
    func close() {
        if let context {
            lock.withLock { stopping = true }
            lws_cancel_service(context)
            serviceEnded.wait()
            self.context = nil
        }
        drain?.stopAll()
        drain = nil
        clients = []
    }

    // MARK: Service thread

    private func serviceLoop() {
        guard let context else { return }
        while !lock.withLock({ stopping }) { _ = lws_service(context, 0) }
        lws_context_destroy(context)
        serviceEnded.signal()
    }

    fileprivate func established(_ wsi: OpaquePointer) {
        rollcall_cap_send_buffer(wsi, 64 * 1024)
        connections.append(wsi)
        lock.withLock { establishedCount += 1 }
    }

    fileprivate func closed(_ wsi: OpaquePointer) {
        connections.removeAll { $0 == wsi }
    }

    fileprivate func serviceCancelled() {
        guard lock.withLock({ () -> Bool in
            defer { roundAsked = false }
            return roundAsked
        }) else { return }
        let payload = buffer + rollcall_lws_pre
        let start = MonotonicSeconds.now
        for wsi in connections { _ = lws_write(wsi, payload, payloadLength, LWS_WRITE_TEXT) }
        let micros = (MonotonicSeconds.now - start) / Double(max(1, connections.count)) * 1e6
        lock.withLock { lastRoundMicros = micros }
        roundEnded.signal()
    }
}

/// The floor server's one protocol callback; the context's user pointer is the broadcast.
private func lwsBroadcastCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ data: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let pointer = lws_context_user(context) else { return 0 }
    let broadcast = Unmanaged<LWSBroadcast>.fromOpaque(pointer).takeUnretainedValue()
    switch reason {
    case LWS_CALLBACK_ESTABLISHED: broadcast.established(wsi)
    case LWS_CALLBACK_CLOSED: broadcast.closed(wsi)
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: broadcast.serviceCancelled()
    case LWS_CALLBACK_RECEIVE: break
    default: return lws_callback_http_dummy(wsi, reason, user, data, length)
    }
    return 0
}
