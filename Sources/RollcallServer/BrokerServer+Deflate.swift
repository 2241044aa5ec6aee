import CLibWebSockets

extension BrokerServer {
    /// permessage-deflate options lws takes per connection (not per context): set on a new
    /// connection before anything is written, as lws sets up its deflate stream lazily on the
    /// first compressed write. Does nothing for a connection that did not negotiate it (lws
    /// answers -1).
    ///
    /// `tx_buf_size`: lws 4.1 deflates into a buffer of 2^10 bytes by default and sends a
    /// longer output as one fragment per writable turn, during which it reads nothing from
    /// the connection (`tx_draining_ext`). A busy broker then starved compressing clients'
    /// input (pongs, requests) until the heartbeat dropped them (docs/transport.md,
    /// "Compression"); a buffer that holds a whole batch sends most messages in one frame.
    func applyDeflateOptions(_ wsi: OpaquePointer) {
        let http = configuration.http
        guard http.permessageDeflate else { return }
        _ = lws_set_extension_option(wsi, "permessage-deflate", "tx_buf_size", String(Self.deflateOutputBufferPower))
        guard http.permessageDeflateMemLevel != Self.defaultDeflateMemLevel else { return }
        _ = lws_set_extension_option(wsi, "permessage-deflate", "mem_level", String(http.permessageDeflateMemLevel))
    }

    /// log2 of lws' deflate output buffer: 2^16, which holds the deflated form of a batch
    /// (`limits.maxBatchBytes`, 16 KiB by default) and of the large single objects a storm
    /// sends (interval lists up to 64 KiB, 1000-member roster pages ~35 KiB), so they go out
    /// as one frame. lws allocates it at the first compressed write; zlib touches only what
    /// it writes.
    static let deflateOutputBufferPower = 16

    /// lws' (and zlib's) deflate `memLevel`.
    static let defaultDeflateMemLevel = 8
}
