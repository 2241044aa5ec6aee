/// One HTTP request as the router sees it: no lws, no socket. The body is complete and at
/// most the route's body limit (``HTTPRoute/bodyLimit``).
public struct HTTPRequest: Sendable, Equatable {
    /// The request method.
    public var method: HTTPMethod
    /// The path, without the query string.
    public var path: String
    /// The `Authorization` header, when present (the server API's bearer key, PROTOCOL §10).
    public var authorization: String?
    /// The `Content-Type` header, when present.
    public var contentType: String?
    /// The request body (empty for GET and HEAD).
    public var body: [UInt8]

    /// A request for `method` and `path`, with optional headers and body.
    public init(method: HTTPMethod, path: String, authorization: String? = nil, contentType: String? = nil, body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.authorization = authorization
        self.contentType = contentType
        self.body = body
    }
}
