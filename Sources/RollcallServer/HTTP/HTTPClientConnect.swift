import CRollcallShim
import Foundation
import RollcallCore

/// The connect step of lws' HTTP client (the webhook sender's POSTs, the key set fetcher's
/// GETs): one HTTP/1.1 request to `url`, redirects not followed, TLS for an `https` URL.
enum HTTPClientConnect {
    /// Opens a client connection to `address` (an address literal or a name lws resolves) on
    /// `vhost`, for `method` on `url`, through the protocol named `protocolName`; `ticket`
    /// comes back as the connection's opaque user data. Nil when lws refused at once.
    static func open(context: OpaquePointer, vhost: OpaquePointer?, address: String, url: WebhookURL, method: String,
                     protocolName: UnsafePointer<CChar>?, ticket: UInt64) -> OpaquePointer? {
        // lws copies these strings into the connection's own storage during the call.
        let texts: [String] = [address, url.path, url.hostHeader, method, "http/1.1"]
        let strings = texts.map { strdup($0)! }
        defer { strings.forEach { free($0) } }
        var info = lws_client_connect_info()
        info.context = context
        info.vhost = vhost
        info.address = UnsafePointer(strings[0])
        info.port = Int32(url.port)
        info.path = UnsafePointer(strings[1])
        info.host = UnsafePointer(strings[2])
        info.method = UnsafePointer(strings[3])
        info.alpn = UnsafePointer(strings[4])
        info.local_protocol_name = protocolName
        info.protocol = protocolName
        var flags = LCCSCF_HTTP_NO_FOLLOW_REDIRECT.rawValue
        if url.secure { flags |= LCCSCF_USE_SSL.rawValue }
        info.ssl_connection = Int32(bitPattern: flags)
        info.opaque_user_data = UnsafeMutableRawPointer(bitPattern: UInt(ticket))
        return lws_client_connect_via_info(&info)
    }
}
