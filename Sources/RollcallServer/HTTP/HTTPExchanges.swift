import RollcallCore

/// The HTTP requests in progress, by the lws per-connection key of their connection, and the
/// server API requests the core has not answered yet, by request id. Also what keep-alive
/// connections had read when their last transaction completed, to tell a pipelined request
/// from a later one. Pure bookkeeping: the lws side is `BrokerServer+HTTP.swift`.
struct HTTPExchanges {
    private var exchanges: [UInt64: HTTPExchange] = [:]
    /// Server API requests handed to the core and not yet answered, by request id.
    private var pending: [APIRequestID: PendingAPIExchange] = [:]
    private var lastAPIRequest: UInt64 = 0
    /// Kept-alive connections: how many bytes lws had read from the socket when their last
    /// transaction completed.
    private var keptAliveReads: [OpaquePointer: Int64] = [:]

    /// The exchange under `key` (nil: none).
    subscript(key: UInt64) -> HTTPExchange? {
        get { exchanges[key] }
        set { exchanges[key] = newValue }
    }

    /// Server API requests waiting for the core's answer.
    var pendingAPIRequests: Int { pending.count }

    /// A server API request on `wsi` (exchange `key`) goes to the core: the exchange waits
    /// for the answer under the id returned.
    mutating func handOff(key: UInt64, wsi: OpaquePointer) -> APIRequestID {
        lastAPIRequest += 1
        let id = APIRequestID(lastAPIRequest)
        exchanges[key] = .awaitingAnswer(id)
        pending[id] = PendingAPIExchange(wsi: wsi, key: key)
        return id
    }

    /// The core answered `id` with `response`: the exchange now answers, and the connection
    /// to ask a writable callback for is returned. Nil when the client hung up meanwhile.
    mutating func answer(_ id: APIRequestID, with response: HTTPResponse) -> OpaquePointer? {
        guard let waiting = pending.removeValue(forKey: id),
              case .awaitingAnswer(id)? = exchanges[waiting.key] else { return nil }
        exchanges[waiting.key] = .answering(response)
        return waiting.wsi
    }

    /// The connection of exchange `key` closed (`LWS_CALLBACK_CLOSED_HTTP`): its exchange goes,
    /// and an answer the core still owes it will be dropped.
    mutating func connectionClosed(key: UInt64) {
        if case .awaitingAnswer(let id)? = exchanges[key] { pending[id] = nil }
        exchanges[key] = nil
    }

    /// A transaction on `wsi` completed when lws had read `bytesRead` bytes from its socket.
    mutating func transactionCompleted(_ wsi: OpaquePointer, bytesRead: Int64) {
        keptAliveReads[wsi] = bytesRead
    }

    /// True for a request head lws parsed from input it had already buffered when the previous
    /// transaction on the connection completed: the client sent it before that answer
    /// (HTTP/1.1 pipelining). lws reads the socket only once its buffer is empty, so nothing
    /// read since that completion (`bytesRead` the same) means the head came from the buffer.
    /// The first request of a connection never does.
    func isPipelined(_ wsi: OpaquePointer, bytesRead: Int64) -> Bool {
        guard let mark = keptAliveReads[wsi], mark >= 0 else { return false }
        return bytesRead == mark
    }

    /// lws destroyed the socket: forget what it had read.
    mutating func socketDestroyed(_ wsi: OpaquePointer) {
        keptAliveReads[wsi] = nil
    }
}
