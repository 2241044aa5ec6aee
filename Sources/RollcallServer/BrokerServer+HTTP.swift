import CRollcallShim
import RollcallCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP on the broker's port, the lws side: reads the request head and body, asks the
/// ``HTTPRouter`` and writes its ``HTTPResponse``. Routes: `GET /livez`, `/readyz` and its alias
/// `/healthz` (``HealthCheck``),
/// `GET /metrics` (``MetricsExposition``), `POST /api/v1/<op>` (``ServerAPIRoute``), the
/// operator's console from `http.adminDir` under `/admin/` (``AdminConsoleRoute``) and static
/// files from `http.staticDir` (``StaticFiles``, `/` → `index.html`). Dynamic bodies are
/// written from the HTTP writable callback after the headers.
extension BrokerServer {
    /// The routes of this server (built once, on first use, on the service thread).
    func makeRouter() -> HTTPRouter {
        let router = HTTPRouter(fallback: { [unowned self] request in staticFile(request.path, from: http.staticFiles) })
        router.add(HTTPRoute(.exact("/livez"), methods: [.get]) { _ in HealthCheck.liveResponse })
        for path in ["/readyz", "/healthz"] {
            router.add(HTTPRoute(.exact(path), methods: [.get]) { [unowned self] _ in
                http.healthCheck.response(accepting: loop.phase == .accepting)
            })
        }
        router.add(HTTPRoute(.exact("/metrics"), methods: [.get]) { [unowned self] _ in
            HTTPResponse(status: 200, contentType: MetricsExposition.contentType, body: .bytes(metricsPage()))
        })
        router.add(ServerAPIRoute.route(bodyLimit: configuration.limits.maxFrameBytes, keys: http.apiKeys))
        if http.adminFiles.root != nil {
            for route in AdminConsoleRoute.routes(serve: { [unowned self] path in staticFile(path, from: http.adminFiles) }) {
                router.add(route)
            }
        }
        return router
    }

    /// The `/metrics` page now.
    func metricsPage() -> [UInt8] {
        var snapshot = MetricsSnapshot(
            broker: broker, transport: metrics, connections: records.count, accepting: loop.phase == .accepting,
            connectionCap: gate.cap.limit, descriptorsInUse: gate.descriptorsInUse)
        if let clusterLink = services.clusterLink { snapshot.cluster = (clusterLink.liveNodes, clusterLink.isConnected, clusterLink.redisAddressChanges, clusterLink.dataLosses) }
        if let webhookSender = services.webhookSender {
            snapshot.webhooks = WebhookMetrics(counters: webhookSender.counters, waitingEvents: webhookSender.waitingEvents)
        }
        snapshot.keySets = services.keySets?.metrics ?? []
        return http.exposition.render(snapshot)
    }

    private func staticFile(_ path: String, from files: StaticFiles) -> HTTPResponse {
        if gate.refusesForCap(&metrics) { return .text(503, ConnectionGate.refusalBody) }
        guard let file = files.file(for: path) else { return HTTPRefusal.notFound.plainResponse }
        return .file(file)
    }

    // MARK: - lws callbacks

    /// Every `LWS_CALLBACK_HTTP*` reason of a plain HTTP connection.
    func httpCallback(
        _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ pss: UnsafeMutablePointer<rollcall_pss_t>?,
        _ input: UnsafeMutableRawPointer?, _ length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_HTTP:
            guard let pss else { return -1 }
            let path = input.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self) } ?? "/"
            return httpRequest(wsi, pss, path: path)
        case LWS_CALLBACK_HTTP_BODY:
            guard let pss else { return -1 }
            return httpBody(pss, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let pss else { return -1 }
            return httpBodyComplete(wsi, pss)
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let pss else { return -1 }
            return httpWritable(wsi, pss)
        case LWS_CALLBACK_HTTP_FILE_COMPLETION:
            gate.fileEnded(wsi)
            return completeTransaction(wsi)
        case LWS_CALLBACK_CLOSED_HTTP:
            if let pss, pss.pointee.key != 0 {
                // A client that hung up before the core answered: its answer will be dropped.
                http.exchanges.connectionClosed(key: pss.pointee.key)
            }
            return 0
        default:
            return 0
        }
    }

    private func httpRequest(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>, path: String) -> Int32 {
        let method = Self.method(of: wsi)
        let declared = Self.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap { Int($0) }
        let chunked = Self.header(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) != nil
        // A body we answer without reading is left unread: the connection closes after the answer.
        // Whatever the method: lws reads a declared body of OPTIONS, DELETE or GET too, and its
        // bytes left behind a keep-alive answer could make lws re-deliver BODY_COMPLETION in a
        // busy loop (found by schemathesis: OPTIONS with a body, then a POST).
        let unreadBody = (declared ?? 0) > 0 || chunked
        if (declared ?? 0) > 0, http.exchanges.isPipelined(wsi, bytesRead: rollcall_socket_bytes_read(wsi)) {
            // lws 4.1 would loop for ever on this request (see docs/transport.md, "Pipelined
            // requests"): no answer, the connection closes. The answers before it are out.
            logger.debug("pipelined HTTP request with a body: connection closed", metadata: ["path": "\(path)"])
            rollcall_drain_and_half_close(wsi)
            return -1
        }
        switch http.router.begin(method: method, path: path, contentLength: declared ?? (chunked ? nil : 0)) {
        case .respond(let response):
            return send(response, wsi, pss, headOnly: method == .head, closeAfter: unreadBody)
        case .handOff(let request):
            return handOff(request, wsi, pss)
        case .readBody(let route, let limit):
            let request = HTTPRequest(
                method: method, path: path, authorization: Self.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
                contentType: Self.header(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE))
            guard let declared, declared > 0 else {
                return deliver(http.router.finish(request, on: route), wsi, pss)
            }
            pss.pointee.key = records.newKey()
            http.exchanges[pss.pointee.key] = .readingBody(request: request, route: route, reader: HTTPBodyReader(limit: limit))
            return 0
        }
    }

    /// `LWS_CALLBACK_HTTP_BODY`: one chunk. Past the limit the reader drops what it held and
    /// the rest of the body is read and dropped; the 413 goes out once it has ended.
    private func httpBody(_ pss: UnsafeMutablePointer<rollcall_pss_t>, _ chunk: UnsafeRawBufferPointer) -> Int32 {
        let key = pss.pointee.key
        guard case .readingBody(let request, let route, var reader)? = http.exchanges[key] else { return 0 }
        http.exchanges[key] = nil  // keeps the reader's buffer uniquely referenced while it grows
        reader.append(chunk)
        http.exchanges[key] = .readingBody(request: request, route: route, reader: reader)
        return 0
    }

    /// `LWS_CALLBACK_HTTP_BODY_COMPLETION`: the body has ended; answer it (or its 413). After
    /// an answer that left the body unread, the connection was closing: close it now.
    private func httpBodyComplete(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        let key = pss.pointee.key
        switch http.exchanges[key] {
        case .readingBody(var request, let route, let reader)?:
            http.exchanges[key] = nil
            guard let body = reader.body else {
                return send(http.router.refuseBody(on: route), wsi, pss, headOnly: false, closeAfter: false)
            }
            request.body = body
            return deliver(http.router.finish(request, on: route), wsi, pss)
        case .discardingBody?:
            return -1
        default:
            return 0
        }
    }

    /// A route's answer to a request whose body was read: a response now, or a hand-off.
    private func deliver(_ answer: HTTPRoute.Answer, _ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        switch answer {
        case .response(let response): send(response, wsi, pss, headOnly: false, closeAfter: false)
        case .handOff(let request): handOff(request, wsi, pss)
        }
    }

    /// Hands a server API request (key already checked) to the core as `.api`; the exchange
    /// waits for its `.respond` (``answerAPIRequest(_:status:body:)``), which a single broker
    /// gives during this very feed.
    private func handOff(_ request: HTTPRequest, _ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        if pss.pointee.key == 0 { pss.pointee.key = records.newKey() }
        let id = http.exchanges.handOff(key: pss.pointee.key, wsi: wsi)
        feed(.api(id, op: ServerAPIRoute.op(of: request), body: request.body))
        return 0
    }

    /// The core's `.respond`: queues the answer on its exchange and asks for a writable
    /// callback. Dropped when the client hung up meanwhile (the exchange is gone).
    func answerAPIRequest(_ id: APIRequestID, status: Int, body: [UInt8]) {
        let response = ServerAPIRoute.response(ServerAPIAnswer(status: status, body: body))
        guard let wsi = http.exchanges.answer(id, with: response) else { return }
        lws_callback_on_writable(wsi)
    }

    /// Writes the headers now and keeps the body for the writable callback.
    private func send(
        _ response: HTTPResponse, _ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>,
        headOnly: Bool, closeAfter: Bool
    ) -> Int32 {
        metrics.httpResponses[response.status, default: 0] += 1
        switch response.body {
        case .file(let path) where headOnly:
            // lws' own HEAD handling of a file confuses the next request on the connection.
            guard let size = StaticFiles.size(of: path) else { return -1 }
            if Self.writeHeaders(of: response, length: size, to: wsi) != 0 { return -1 }
            if pss.pointee.key == 0 { pss.pointee.key = records.newKey() }
            http.exchanges[pss.pointee.key] = .writing(body: [], closeAfter: closeAfter)
            lws_callback_on_writable(wsi)
            return 0
        case .file(let path):
            let result = rollcall_http_serve_file(wsi, path, response.contentType)
            if result < 0 { return -1 }
            if result == 0 { gate.fileStarted(wsi) }
            if result > 0 { return completeTransaction(wsi) }
            return 0
        case .bytes(let bytes):
            if Self.writeHeaders(of: response, length: bytes.count, to: wsi) != 0 { return -1 }
            if pss.pointee.key == 0 { pss.pointee.key = records.newKey() }
            http.exchanges[pss.pointee.key] = .writing(body: headOnly ? [] : bytes, closeAfter: closeAfter)
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    private func httpWritable(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        let key = pss.pointee.key
        if case .answering(let response)? = http.exchanges[key] {
            guard case .bytes(let bytes) = response.body else { return -1 }
            metrics.httpResponses[response.status, default: 0] += 1
            if Self.writeHeaders(of: response, length: bytes.count, to: wsi) != 0 { return -1 }
            http.exchanges[key] = .writing(body: bytes, closeAfter: false)
            lws_callback_on_writable(wsi)
            return 0
        }
        guard case .writing(let body, let closeAfter)? = http.exchanges[key] else { return 0 }
        if !body.isEmpty {
            let writer = output.writer
            writer.reserve(body.count)
            body.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { writer.payload.update(from: base, count: source.count) }
            }
            if lws_write(wsi, writer.payload, body.count, LWS_WRITE_HTTP_FINAL) != body.count { return -1 }
        }
        if closeAfter {
            if lws_send_pipe_choked(wsi) != 0 {
                // lws holds the tail of the answer: half-close only once it is out.
                http.exchanges[key] = .writing(body: [], closeAfter: true)
                lws_callback_on_writable(wsi)
                return 0
            }
            http.exchanges[key] = .discardingBody
            if rollcall_half_close(wsi) != 0 { return -1 }
            lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, ConnectionLifecycle.lingerSeconds)
            return 0
        }
        http.exchanges[key] = nil
        pss.pointee.key = 0
        return completeTransaction(wsi)
    }

    /// Writes the head of `response` for a body of `length` bytes: status, content type,
    /// length, `Cache-Control` and the response's own fields. Nonzero: hang up.
    static func writeHeaders(of response: HTTPResponse, length: Int, to wsi: OpaquePointer) -> Int32 {
        let names = response.headers.map { strdup($0.name.lowercased() + ":") }
        let values = response.headers.map { strdup($0.value) }
        defer { (names + values).forEach { free($0) } }
        let constNames = names.map { UnsafePointer($0) }
        let constValues = values.map { UnsafePointer($0) }
        return rollcall_http_write_headers(
            wsi, UInt32(response.status), response.contentType, length, constNames, constValues, Int32(names.count))
    }

    /// Ends the transaction (HTTP keep-alive: the connection waits for the next request) and
    /// notes how much lws has read from the socket by now, for ``HTTPExchanges/isPipelined(_:bytesRead:)``.
    func completeTransaction(_ wsi: OpaquePointer) -> Int32 {
        http.exchanges.transactionCompleted(wsi, bytesRead: rollcall_socket_bytes_read(wsi))
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    // MARK: - Request head

    /// The request method, from the URI token lws filled.
    static func method(of wsi: OpaquePointer) -> HTTPMethod {
        let tokens: [(lws_token_indexes, HTTPMethod)] = [
            (WSI_TOKEN_GET_URI, .get), (WSI_TOKEN_POST_URI, .post), (WSI_TOKEN_HEAD_URI, .head),
            (WSI_TOKEN_PUT_URI, .put), (WSI_TOKEN_PATCH_URI, .patch), (WSI_TOKEN_DELETE_URI, .delete),
            (WSI_TOKEN_OPTIONS_URI, .options),
        ]
        return tokens.first { lws_hdr_total_length(wsi, $0.0) > 0 }?.1 ?? .other
    }

    /// A request header's value, nil when absent (or longer than 4 KiB).
    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0, length < 4096 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return String(cString: buffer)
    }
}
