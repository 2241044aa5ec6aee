import Foundation

/// The route of the server API, `POST /api/v1/<op>` (PROTOCOL §10): bodies up to
/// `limits.maxFrameBytes`, every answer JSON. The router's refusals come out as the API's
/// errors: 405 `INVALID_REQUEST`, 413 `MESSAGE_TOO_LARGE`. The ops themselves are not here
/// yet: until a handler is plugged in (``route(bodyLimit:handle:)``), every request gets
/// 401 `UNAUTHORIZED`, as the API answers when no key is configured.
public enum ServerAPIRoute {
    /// The path prefix; the op follows it.
    public static let prefix = "/api/v1/"

    /// The route, with `handle` answering requests that passed the method and size checks.
    public static func route(bodyLimit: Int, handle: @escaping (HTTPRequest) -> HTTPResponse = apiOff) -> HTTPRoute {
        HTTPRoute(.prefix(prefix), methods: [.post], bodyLimit: bodyLimit, refuse: refusal, handle: handle)
    }

    /// The op a request names (`/api/v1/publish` → `publish`).
    public static func op(of request: HTTPRequest) -> String {
        String(request.path.dropFirst(prefix.count))
    }

    /// The answer while no API key is configured.
    public static func apiOff(_ request: HTTPRequest) -> HTTPResponse {
        error(401, code: "UNAUTHORIZED", message: "the server API is off: no API key is configured")
    }

    /// `{"ok": false, "error": {"code", "message"}}` with `status`.
    public static func error(_ status: Int, code: String, message: String) -> HTTPResponse {
        let object: [String: Any] = ["ok": false, "error": ["code": code, "message": message]]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { [UInt8]($0) } ?? []
        return HTTPResponse(status: status, contentType: "application/json", body: .bytes(body))
    }

    private static func refusal(_ refusal: HTTPRefusal) -> HTTPResponse {
        switch refusal {
        case .notFound: error(404, code: "UNKNOWN_OP", message: "no such op")
        case .methodNotAllowed: error(405, code: "INVALID_REQUEST", message: "the server API takes POST only")
        case .lengthRequired: error(411, code: "INVALID_REQUEST", message: "the body needs a Content-Length")
        case .bodyTooLarge(let limit): error(413, code: "MESSAGE_TOO_LARGE", message: "the body is larger than \(limit) bytes")
        }
    }
}
