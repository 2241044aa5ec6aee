/// What the router answers: a status, a content type, more header fields when needed, and
/// either bytes or a file to send. The lws glue (`BrokerServer+HTTP.swift`) writes it; for HEAD it writes the headers only.
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
    /// Header fields besides the content type, length and `Cache-Control` (written for a
    /// body of bytes; a file is served with lws' own headers).
    public var headers: [HTTPHeaderField]

    /// A response with `status`, `contentType`, `body` and more `headers`.
    public init(status: Int, contentType: String, body: Body, headers: [HTTPHeaderField] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// This response with `field` added to its headers.
    public func adding(_ field: HTTPHeaderField) -> HTTPResponse {
        var response = self
        response.headers.append(field)
        return response
    }

    /// `308 Permanent Redirect` to `target` (a short text body for clients that show it).
    public static func redirect(to target: String) -> HTTPResponse {
        text(308, "moved to \(target)\n").adding(.location(target))
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
