import CLibWebSockets

extension BrokerServer {
    /// permessage-deflate options lws takes per connection (not per context): set on a new
    /// connection before anything is written, as lws sets up its deflate stream lazily on the
    /// first compressed write. Does nothing for a connection that did not negotiate it (lws
    /// answers -1) or when the setting is lws' default.
    func applyDeflateOptions(_ wsi: OpaquePointer) {
        let http = configuration.http
        guard http.permessageDeflate, http.permessageDeflateMemLevel != Self.defaultDeflateMemLevel else { return }
        _ = lws_set_extension_option(wsi, "permessage-deflate", "mem_level", String(http.permessageDeflateMemLevel))
    }

    /// lws' (and zlib's) deflate `memLevel`.
    static let defaultDeflateMemLevel = 8
}
