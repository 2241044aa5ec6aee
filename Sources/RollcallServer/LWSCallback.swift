import CRollcallShim
import RollcallCore
import RollcallEventLoop

/// The protocol callback lws calls for every WebSocket and HTTP event of the vhost. It finds
/// the server through the context's user pointer and dispatches; it never throws across C.
let rollcallLWSCallback: @convention(c) (
    OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int
) -> Int32 = { wsi, reason, user, input, length in
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    let server = Unmanaged<BrokerServer>.fromOpaque(owner).takeUnretainedValue()
    return server.handleCallback(wsi, reason, user?.assumingMemoryBound(to: rollcall_pss_t.self), input, length)
}

extension BrokerServer {
    func handleCallback(
        _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ pss: UnsafeMutablePointer<rollcall_pss_t>?,
        _ input: UnsafeMutableRawPointer?, _ length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            guard let pss else { return -1 }
            return established(wsi, pss)
        case LWS_CALLBACK_RECEIVE:
            guard let record = record(pss) else { return -1 }
            return received(record, input, length)
        case LWS_CALLBACK_RECEIVE_PONG:
            record(pss)?.lifecycle.heard(at: MonotonicClock.now)
            return 0
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let record = record(pss) else { return 0 }
            return writable(record)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            guard let record = record(pss) else { return 0 }
            return peerSentClose(record)
        case LWS_CALLBACK_CLOSED:
            if let record = record(pss) { closed(record) }
            return 0
        case LWS_CALLBACK_HTTP, LWS_CALLBACK_HTTP_BODY, LWS_CALLBACK_HTTP_BODY_COMPLETION, LWS_CALLBACK_HTTP_WRITEABLE,
             LWS_CALLBACK_HTTP_FILE_COMPLETION, LWS_CALLBACK_CLOSED_HTTP:
            return httpCallback(wsi, reason, pss, input, length)
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return gate.admitsNewSocket(&metrics) ? 0 : 1
        case LWS_CALLBACK_WSI_CREATE:
            gate.socketCreated(wsi)
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            gate.socketDestroyed(wsi)
            http.exchanges.socketDestroyed(wsi)
            return 0
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            if lifecycle.stopRequested { beginShutdown() }
            services.keySets?.serviceWoken()
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, pss.map { UnsafeMutableRawPointer($0) }, input, length)
        }
    }

    /// The record of a WebSocket connection, from lws' per-connection space.
    private func record(_ pss: UnsafeMutablePointer<rollcall_pss_t>?) -> ConnectionRecord? {
        guard let key = pss?.pointee.key, key != 0 else { return nil }
        return records[ConnectionID(key)]
    }
}
