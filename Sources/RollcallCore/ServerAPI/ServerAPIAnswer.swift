import RollcallProtocol

/// The HTTP answer to one server API request (PROTOCOL §10): `{"ok":true,"result":…}` with
/// 200, or `{"ok":false,"error":{"code","message"[,"retryAfterMs"]}}` with the status its
/// code maps to (``status(for:)``). The core builds answers to ops; the transport builds the
/// ones it gives before the core (401, 405, 413) with the same encoder.
public struct ServerAPIAnswer: Sendable, Equatable {
    /// The HTTP status.
    public let status: Int
    /// The JSON body.
    public let body: [UInt8]

    /// 200 with `{"ok":true,"result":result}`.
    static func success(_ result: JSON) -> ServerAPIAnswer {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("ok"); writer.bool(true)
        writer.key("result"); writer.value(result)
        writer.endObject()
        return ServerAPIAnswer(status: 200, body: writer.bytes)
    }

    /// The error's answer with the status its code maps to.
    public static func failure(_ error: BrokerError) -> ServerAPIAnswer {
        failure(error, status: status(for: error.code))
    }

    /// The error's answer with an explicit `status` (the transport's 405 and 413).
    public static func failure(_ error: BrokerError, status: Int) -> ServerAPIAnswer {
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.key("ok"); writer.bool(false)
        writer.key("error")
        writer.beginObject()
        writer.key("code"); writer.string(error.code.rawValue)
        writer.key("message"); writer.string(error.message)
        if let retryAfterMs = error.retryAfterMs { writer.key("retryAfterMs"); writer.int(retryAfterMs) }
        writer.endObject()
        writer.endObject()
        return ServerAPIAnswer(status: status, body: writer.bytes)
    }

    /// The answer to an op's outcome.
    init(_ outcome: Result<JSON, BrokerError>) {
        switch outcome {
        case .success(let result): self = .success(result)
        case .failure(let error): self = .failure(error)
        }
    }

    /// An answer as carried by ``Action/respond(_:status:body:)``.
    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    /// The HTTP status of an error code: `UNAUTHORIZED` 401, `UNKNOWN_OP` 404, `UNAVAILABLE`
    /// 503, `INTERNAL` 500, every other code (malformed requests and the ops' own codes) 400.
    /// The transport's refusals map 405 and 413 themselves.
    public static func status(for code: ErrorCode) -> Int {
        switch code {
        case .unauthorized: 401
        case .unknownOp: 404
        case .unavailable: 503
        case .internal: 500
        default: 400
        }
    }
}
