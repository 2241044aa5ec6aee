@testable import RollcallServer
import Testing

@Suite("HTTPRouter")
struct HTTPRouterTests {
    /// `/healthz` (GET), `/echo` (POST, 8 bytes at most), `/api/` prefix (POST, JSON-ish refusals)
    /// and a fallback that serves `/` only.
    func makeRouter() -> HTTPRouter {
        let router = HTTPRouter(fallback: { request in
            request.path == "/" ? .text(200, "index") : HTTPRefusal.notFound.plainResponse
        })
        router.add(HTTPRoute(.exact("/healthz"), methods: [.get]) { _ in .text(200, "ok") })
        router.add(HTTPRoute(.exact("/echo"), methods: [.post], bodyLimit: 8) { request in
            HTTPResponse(status: 200, contentType: "application/octet-stream", body: .bytes(request.body))
        })
        router.add(HTTPRoute(.prefix("/api/"), methods: [.post], bodyLimit: 8,
                             refuse: { .text($0.status, "api refusal \($0.status)") }) { request in
            .text(200, "op " + request.path.dropFirst("/api/".count))
        })
        return router
    }

    @Test("an exact path answers GET")
    func exactPath() {
        let response = makeRouter().respond(to: HTTPRequest(method: .get, path: "/healthz"))
        #expect(response == .text(200, "ok"))
    }

    @Test("HEAD is answered wherever GET is, with the same response (the glue drops the body)")
    func headFollowsGet() {
        let router = makeRouter()
        #expect(router.respond(to: HTTPRequest(method: .head, path: "/healthz")) == .text(200, "ok"))
        #expect(router.respond(to: HTTPRequest(method: .head, path: "/")) == .text(200, "index"))
        #expect(router.respond(to: HTTPRequest(method: .head, path: "/echo")).status == 405)
    }

    @Test("an unknown path is 404 for GET (via the fallback) and for POST")
    func notFound() {
        let router = makeRouter()
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/nope")).status == 404)
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/nope", body: [1])).status == 404)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/")).status == 200)
    }

    @Test("a known path with another method is 405, worded by the route, with the route's methods in Allow")
    func methodNotAllowed() {
        let router = makeRouter()
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/healthz"))
            == HTTPRefusal.methodNotAllowed.plainResponse.adding(HTTPHeaderField(name: "Allow", value: "GET, HEAD")))
        #expect(router.respond(to: HTTPRequest(method: .delete, path: "/healthz")).status == 405)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/echo")).headers == [HTTPHeaderField(name: "Allow", value: "POST")])
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/publish")) == .text(405, "api refusal 405").adding(.allow([.post])))
        for method in [HTTPMethod.put, .patch, .options, .delete, .head] {
            #expect(router.respond(to: HTTPRequest(method: method, path: "/api/x")).headers == [.allow([.post])], "\(method)")
        }
    }

    @Test("Allow lists the methods in a fixed order, HEAD wherever GET is")
    func allowField() {
        #expect(HTTPHeaderField.allow([.post, .get]).value == "GET, HEAD, POST")
        #expect(HTTPHeaderField.allow([.delete, .put]).value == "PUT, DELETE")
        #expect(HTTPHeaderField.allow([.get]) == HTTPHeaderField(name: "Allow", value: "GET, HEAD"))
    }

    @Test("a prefix route takes every path under it")
    func prefixRoute() {
        let router = makeRouter()
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/api/publish")).bodyText == "op publish")
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/api/getInfo")).bodyText == "op getInfo")
    }

    @Test("a body within the limit reaches the handler")
    func bodyWithinLimit() {
        let response = makeRouter().respond(to: HTTPRequest(method: .post, path: "/echo", body: Array("12345678".utf8)))
        #expect(response.status == 200)
        #expect(response.bodyText == "12345678")
    }

    @Test("a body over the limit is 413: at once when declared, after reading when it grows past it")
    func bodyTooLarge() {
        let router = makeRouter()
        guard case .respond(let declared) = router.begin(method: .post, path: "/echo", contentLength: 9) else {
            Issue.record("a declared oversize body must be answered at once")
            return
        }
        #expect(declared == HTTPRefusal.bodyTooLarge(limit: 8).plainResponse)
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/api/x", body: Array(repeating: 0, count: 9)))
            == .text(413, "api refusal 413"))

        guard case .readBody(let route, let limit) = router.begin(method: .post, path: "/echo", contentLength: 5) else {
            Issue.record("a body declared within the limit must be read")
            return
        }
        #expect(limit == 8)
        var reader = HTTPBodyReader(limit: limit)
        let accepted1 = reader.append(Array("12345".utf8))
        #expect(accepted1)
        let accepted2 = reader.append(Array("6789".utf8))
        #expect(!accepted2)
        #expect(reader.body == nil)
        #expect(router.refuseBody(on: route).status == 413)
    }

    @Test("a body of undeclared length (chunked) is 411 on a route that reads bodies")
    func lengthRequired() {
        guard case .respond(let response) = makeRouter().begin(method: .post, path: "/echo", contentLength: nil) else {
            Issue.record("a body of undeclared length must be answered at once")
            return
        }
        #expect(response.status == 411)
    }

    @Test("a GET to a body route never reads a body")
    func getReadsNoBody() {
        let router = HTTPRouter()
        router.add(HTTPRoute(.exact("/x"), methods: [.get, .post], bodyLimit: 4) { .text(200, "\($0.body.count)") })
        guard case .respond(let response) = router.begin(method: .get, path: "/x", contentLength: 100) else {
            Issue.record("GET must be answered at once")
            return
        }
        #expect(response == .text(200, "0"))
        guard case .readBody = router.begin(method: .post, path: "/x", contentLength: 4) else {
            Issue.record("POST within the limit must read its body")
            return
        }
    }

    @Test("routes are tried in the order they were added")
    func routeOrder() {
        let router = HTTPRouter()
        router.add(HTTPRoute(.exact("/a/b"), methods: [.get]) { _ in .text(200, "exact") })
        router.add(HTTPRoute(.prefix("/a/"), methods: [.get]) { _ in .text(200, "prefix") })
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/a/b")).bodyText == "exact")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/a/c")).bodyText == "prefix")
    }
}

@Suite("HTTPBodyReader")
struct HTTPBodyReaderTests {
    @Test("collects chunks up to the limit, exactly at the limit included")
    func collects() {
        var reader = HTTPBodyReader(limit: 6)
        let accepted3 = reader.append([1, 2, 3])
        #expect(accepted3)
        let accepted4 = reader.append([4, 5, 6])
        #expect(accepted4)
        #expect(reader.body == [1, 2, 3, 4, 5, 6])
        #expect(!reader.overflowed)
    }

    @Test("past the limit it keeps nothing and refuses every later chunk")
    func overflows() {
        var reader = HTTPBodyReader(limit: 4)
        let accepted5 = reader.append([1, 2, 3])
        #expect(accepted5)
        let accepted6 = reader.append([4, 5])
        #expect(!accepted6)
        let accepted7 = reader.append([6])
        #expect(!accepted7)
        #expect(reader.overflowed)
        #expect(reader.body == nil)
    }
}

@Suite("AdminConsoleRoute")
struct AdminConsoleRouteTests {
    /// The console's routes in front of a fallback, serving a fake folder: `/` and `/app.js`.
    func makeRouter() -> HTTPRouter {
        let router = HTTPRouter(fallback: { _ in .text(200, "demo") })
        for route in AdminConsoleRoute.routes(serve: { path in
            ["/", "/app.js"].contains(path) ? .text(200, "console \(path)") : HTTPRefusal.notFound.plainResponse
        }) {
            router.add(route)
        }
        return router
    }

    @Test("/admin redirects to admin/ (relative), /admin/ is the console's index, its files are under it")
    func paths() {
        let router = makeRouter()
        let redirect = router.respond(to: HTTPRequest(method: .get, path: "/admin"))
        #expect(redirect.status == 308)
        #expect(redirect.headers == [HTTPHeaderField(name: "Location", value: "admin/")])
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/admin/")).bodyText == "console /")
        #expect(router.respond(to: HTTPRequest(method: .head, path: "/admin/app.js")).bodyText == "console /app.js")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/admin/nope.js")).status == 404)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/administrator")).bodyText == "demo")
    }

    @Test("the console takes GET and HEAD only: anything else is 405 with Allow")
    func methods() {
        let refused = makeRouter().respond(to: HTTPRequest(method: .post, path: "/admin/", body: [1]))
        #expect(refused.status == 405)
        #expect(refused.headers == [HTTPHeaderField(name: "Allow", value: "GET, HEAD")])
    }
}
