import CRollcallShim
import RollcallCore

/// HTTP on the broker's port: `GET /healthz`, `GET /metrics`, and static files from
/// `http.staticDir` (`/` → `index.html`). Dynamic bodies are written from the HTTP writable
/// callback after the headers.
extension BrokerServer {
    func httpRequest(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>, path: String) -> Int32 {
        guard lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0 else {
            return respond(wsi, pss, status: 405, body: "method not allowed\n")
        }
        switch path {
        case "/healthz":
            return phase == .accepting
                ? respond(wsi, pss, status: 200, body: "ok")
                : respond(wsi, pss, status: 503, body: "shutting down")
        case "/metrics":
            let page = MetricsPage.render(
                transport: metrics, connectionsCurrent: records.count, broker: broker, accepting: phase == .accepting,
                connectionCap: connectionCap.limit, descriptorsInUse: descriptorsInUse)
            return respond(wsi, pss, status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: page)
        default:
            if refusesForConnectionCap() {
                return respond(wsi, pss, status: 503, body: ConnectionCapPolicy.refusalBody)
            }
            guard let file = staticFiles.file(for: path) else {
                return respond(wsi, pss, status: 404, body: "not found\n")
            }
            metrics.httpResponses[200, default: 0] += 1
            let result = rollcall_http_serve_file(wsi, file, StaticFiles.contentType(for: file))
            if result < 0 { return -1 }
            if result == 0 { fileTransfers.insert(wsi) }
            if result > 0 { return lws_http_transaction_completed(wsi) != 0 ? -1 : 0 }
            return 0
        }
    }

    /// Writes the headers now and keeps the body for the writable callback.
    private func respond(
        _ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>, status: Int,
        contentType: String = "text/plain; charset=utf-8", body: String
    ) -> Int32 {
        metrics.httpResponses[status, default: 0] += 1
        let bytes = Array(body.utf8)
        if rollcall_http_write_headers(wsi, UInt32(status), contentType, bytes.count) != 0 { return -1 }
        nextKey += 1
        pss.pointee.key = nextKey
        httpBodies[nextKey] = bytes
        lws_callback_on_writable(wsi)
        return 0
    }

    func httpWritable(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        guard let body = httpBodies.removeValue(forKey: pss.pointee.key) else { return 0 }
        pss.pointee.key = 0
        writer.reserve(body.count)
        body.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { writer.payload.update(from: base, count: source.count) }
        }
        if lws_write(wsi, writer.payload, body.count, LWS_WRITE_HTTP_FINAL) != body.count { return -1 }
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }
}
