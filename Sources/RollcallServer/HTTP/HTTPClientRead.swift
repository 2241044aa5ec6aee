import CRollcallShim

/// The read step of lws' HTTP client (the webhook sender's POSTs, the key set fetcher's GETs).
enum HTTPClientRead {
    /// Has lws read what the socket holds of an answer's body, at most `chunkBytes` at a time,
    /// on `LWS_CALLBACK_RECEIVE_CLIENT_HTTP`: lws hands it, without chunked framing, to
    /// `LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ`. Returns what the callback returns (-1: hang up).
    static func readAvailable(_ wsi: OpaquePointer, chunkBytes: Int) -> Int32 {
        let pre = Int(rollcall_lws_pre)
        var buffer = [UInt8](repeating: 0, count: pre + chunkBytes)
        return buffer.withUnsafeMutableBufferPointer { storage -> Int32 in
            var start: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(storage.baseAddress! + pre)
                .assumingMemoryBound(to: CChar.self)
            var room = Int32(chunkBytes)
            return lws_http_client_read(wsi, &start, &room) < 0 ? -1 : 0
        }
    }
}
