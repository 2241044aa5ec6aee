// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import CLibWebSockets
import CRollcallShim
import Foundation

/// The one lws protocol callback of every client runtime. `user` is the connection
/// (passed as `userdata` at connect time); the runtime is the context's user pointer.
func rollcallClientCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ data: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    if reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED {
        if let wsi, let context = lws_get_context(wsi), let runtimePointer = lws_context_user(context) {
            Unmanaged<ClientRuntime>.fromOpaque(runtimePointer).takeUnretainedValue().drainCommands()
        }
        return 0
    }
    if reason == LWS_CALLBACK_WS_EXT_DEFAULTS {
        // Here `user` is the extension's name, not the connection: never read it as one
        // (retaining a C string as an object is what broke a second deflate handshake).
        return 0
    }
    guard let wsi, let user else { return 0 }
    let connection = Unmanaged<RollcallConnection>.fromOpaque(user).takeUnretainedValue()
    switch reason {
    case LWS_CALLBACK_CLIENT_CONFIRM_EXTENSION_SUPPORTED:
        // 0 offers the extension in this handshake, nonzero leaves it out.
        return connection.permessageDeflate ? 0 : 1
    case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
        connection.serviceUpgradeAccepted(wsi)
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        connection.serviceEstablished(wsi)
    case LWS_CALLBACK_CLIENT_RECEIVE:
        connection.serviceReceive(wsi, data.map { UnsafeRawPointer($0) }, length)
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return connection.serviceWriteable(wsi)
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        connection.servicePeerClose(data.map { UnsafeRawPointer($0) }, length)
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        let message = data.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
        connection.serviceConnectionError(message)
    case LWS_CALLBACK_CLIENT_CLOSED:
        connection.serviceClosed()
    case LWS_CALLBACK_WSI_DESTROY:
        connection.serviceDestroyed()
    default:
        break
    }
    return 0
}
#endif
