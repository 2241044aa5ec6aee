import RollcallCore
import RollcallProtocol

/// The route of the server API, `POST /api/v1/<op>` (PROTOCOL §10): bodies up to
/// `limits.maxFrameBytes`, every answer JSON. The router's refusals come out as the API's
/// errors: 405 `INVALID_REQUEST`, 411 and 413 `MESSAGE_TOO_LARGE`. A request with an
/// accepted bearer key is handed off to the server, which feeds it to the broker's core
/// (``RollcallCore/InboundEvent/api(_:op:body:)``); any other gets 401 `UNAUTHORIZED` — every
/// request does while no key is configured.
///
/// Order of the checks: method (405), body size (413), key (401), then the core's op (404)
/// and body (400).
public enum ServerAPIRoute {
    /// The path prefix; the op follows it.
    public static let prefix = "/api/v1/"
    /// The content type of every answer.
    public static let contentType = "application/json"

    /// The route: requests whose `Authorization` is `Bearer <key>` with one of `keys` are
    /// handed off to the server; others get 401.
    public static func route(bodyLimit: Int, keys: ServerAPIKeys) -> HTTPRoute {
        HTTPRoute(.prefix(prefix), methods: [.post], bodyLimit: bodyLimit, refuse: refusal) { request in
            guard keys.accepts(authorization: request.authorization) else {
                let message = keys.isEmpty ? "the server API is off: no API key is configured" : "a valid API key is required (Authorization: Bearer <key>)"
                return .response(error(401, code: .unauthorized, message: message))
            }
            return .handOff(request)
        }
    }

    /// The route with `handle` answering requests that passed the method and size checks
    /// (tests; default: the API is off).
    public static func route(bodyLimit: Int, handle: @escaping (HTTPRequest) -> HTTPResponse = apiOff) -> HTTPRoute {
        HTTPRoute(.prefix(prefix), methods: [.post], bodyLimit: bodyLimit, refuse: refusal, handle: handle)
    }

    /// The op a request names (`/api/v1/publish` → `publish`).
    public static func op(of request: HTTPRequest) -> String {
        String(decoding: request.path.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
    }

    /// The answer while no API key is configured.
    public static func apiOff(_ request: HTTPRequest) -> HTTPResponse {
        error(401, code: .unauthorized, message: "the server API is off: no API key is configured")
    }

    /// `{"ok": false, "error": {"code", "message"}}` with `status`.
    public static func error(_ status: Int, code: ErrorCode, message: String) -> HTTPResponse {
        response(ServerAPIAnswer.failure(BrokerError(code, message), status: status))
    }

    /// The core's answer as an HTTP response.
    public static func response(_ answer: ServerAPIAnswer) -> HTTPResponse {
        HTTPResponse(status: answer.status, contentType: contentType, body: .bytes(answer.body))
    }

    private static func refusal(_ refusal: HTTPRefusal) -> HTTPResponse {
        switch refusal {
        case .notFound: error(404, code: .unknownOp, message: "no such op")
        case .methodNotAllowed: error(405, code: .invalidRequest, message: "the server API takes POST only")
        case .lengthRequired: error(411, code: .invalidRequest, message: "the body needs a Content-Length")
        case .bodyTooLarge(let limit): error(413, code: .messageTooLarge, message: "the body is larger than \(limit) bytes")
        }
    }
}
