/// Why the router answered a request without running its handler.
public enum HTTPRefusal: Sendable, Equatable {
    /// No route and no static file for the path (404).
    case notFound
    /// A route matched the path but not the method (405).
    case methodNotAllowed
    /// The body is, or says it will be, larger than the route's limit (413).
    case bodyTooLarge(limit: Int)
    /// The body's length is not declared (`Transfer-Encoding: chunked`, which lws 4.1 does
    /// not deliver to the server), 411.
    case lengthRequired

    /// The status code of the refusal.
    public var status: Int {
        switch self {
        case .notFound: 404
        case .methodNotAllowed: 405
        case .bodyTooLarge: 413
        case .lengthRequired: 411
        }
    }

    /// The plain-text answer, for routes that do not answer in their own format.
    public var plainResponse: HTTPResponse {
        switch self {
        case .notFound: .text(404, "not found\n")
        case .methodNotAllowed: .text(405, "method not allowed\n")
        case .bodyTooLarge(let limit): .text(413, "body larger than \(limit) bytes\n")
        case .lengthRequired: .text(411, "a body needs a Content-Length\n")
        }
    }
}
