/// Maps (method, path) to a route and answers with an ``HTTPResponse`` value; it never
/// touches lws, so it is tested on its own. A request goes through it in two steps, because
/// a body arrives after the head:
///
/// 1. ``begin(method:path:contentLength:)`` at the request head: a response at once (404,
///    405 with the route's methods in `Allow`, 411 for a body of undeclared length, 413 for
///    a declared body over the limit, or the answer of a route that takes no body), or "read
///    the body, at most N bytes";
/// 2. ``finish(_:on:)`` once the body is complete (``HTTPBodyReader``), or
///    ``refuseBody(on:)`` when it grew past the limit.
///
/// Routes are tried in the order they were added; a path no route takes goes to the
/// fallback (static files) for GET and HEAD, and is 404 otherwise.
public final class HTTPRouter {
    /// What to do after the request head.
    public enum Step {
        /// Answer now.
        case respond(HTTPResponse)
        /// Read the body (at most `limit` bytes), then call ``HTTPRouter/finish(_:on:)`` with `route`.
        case readBody(route: Int, limit: Int)
        /// The route hands the request (it has no body) to the server, which answers later.
        case handOff(HTTPRequest)
    }

    private var routes: [HTTPRoute] = []
    private let fallback: (HTTPRequest) -> HTTPResponse

    /// A router whose unrouted GET and HEAD requests go to `fallback` (default: 404).
    public init(fallback: @escaping (HTTPRequest) -> HTTPResponse = { _ in HTTPRefusal.notFound.plainResponse }) {
        self.fallback = fallback
    }

    /// Adds `route` after the existing ones.
    public func add(_ route: HTTPRoute) {
        routes.append(route)
    }

    /// The first step, at the request head. `contentLength` is the declared body length: 0
    /// when the request has no body, nil when its length is not declared (chunked), which a
    /// route reading bodies refuses with 411.
    public func begin(method: HTTPMethod, path: String, contentLength: Int?) -> Step {
        guard let index = routes.firstIndex(where: { $0.path.matches(path) }) else {
            let isRead = method == .get || method == .head
            return .respond(isRead ? fallback(HTTPRequest(method: method, path: path)) : HTTPRefusal.notFound.plainResponse)
        }
        let route = routes[index]
        guard route.allows(method) else {
            return .respond(route.refuse(.methodNotAllowed).adding(.allow(route.methods)))
        }
        guard method.carriesBody, route.bodyLimit > 0 else {
            switch route.answer(HTTPRequest(method: method, path: path)) {
            case .response(let response): return .respond(response)
            case .handOff(let request): return .handOff(request)
            }
        }
        guard let contentLength else { return .respond(route.refuse(.lengthRequired)) }
        if contentLength > route.bodyLimit {
            return .respond(route.refuse(.bodyTooLarge(limit: route.bodyLimit)))
        }
        return .readBody(route: index, limit: route.bodyLimit)
    }

    /// The second step: `request` has its complete body, within the limit.
    public func finish(_ request: HTTPRequest, on route: Int) -> HTTPRoute.Answer {
        routes[route].answer(request)
    }

    /// The second step when the body grew past the route's limit.
    public func refuseBody(on route: Int) -> HTTPResponse {
        routes[route].refuse(.bodyTooLarge(limit: routes[route].bodyLimit))
    }

    /// Both steps for a request whose body is already at hand (tests, and callers without
    /// streaming): the body counts against the limit as if it had been read.
    public func answer(to request: HTTPRequest) -> HTTPRoute.Answer {
        switch begin(method: request.method, path: request.path, contentLength: request.body.count) {
        case .respond(let response):
            return .response(response)
        case .handOff(let request):
            return .handOff(request)
        case .readBody(let route, let limit):
            var reader = HTTPBodyReader(limit: limit)
            reader.append(request.body)
            guard let body = reader.body else { return .response(refuseBody(on: route)) }
            var complete = request
            complete.body = body
            return finish(complete, on: route)
        }
    }

    /// ``answer(to:)`` for routes that answer at once; a handed-off request, which only the
    /// server can answer, comes back as 500.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        switch answer(to: request) {
        case .response(let response): response
        case .handOff: .text(500, "handed off to the server\n")
        }
    }
}
