/// What the router answers: a status, a content type and either bytes or a file to send.
/// The lws glue (`BrokerServer+HTTP.swift`) writes it; for HEAD it writes the headers only.
public struct HTTPResponse: Sendable, Equatable {
    /// The response body.
    public enum Body: Sendable, Equatable {
        /// Bytes written after the headers, with their `Content-Length`.
        case bytes([UInt8])
        /// A regular file sent by lws (`lws_serve_http_file`), already resolved and checked.
        case file(path: String)
    }

    /// The HTTP status code.
    public var status: Int
    /// The `Content-Type` header.
    public var contentType: String
    /// The body.
    public var body: Body

    /// A response with `status`, `contentType` and `body`.
    public init(status: Int, contentType: String, body: Body) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// `text/plain` UTF-8 with `text` as the body.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: .bytes(Array(text.utf8)))
    }

    /// The file at `path` with the content type its extension names (``StaticFiles/contentType(for:)``).
    static func file(_ path: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: StaticFiles.contentType(for: path), body: .file(path: path))
    }

    /// The body as text, for tests and logs (empty for a file).
    public var bodyText: String {
        if case .bytes(let bytes) = body { return String(decoding: bytes, as: UTF8.self) }
        return ""
    }
}
