@testable import RollcallServer
import RollcallCore
import Testing

@Suite("HealthCheck")
struct HealthCheckTests {
    @Test("accepting with no failing probe: 200 ok")
    func healthy() {
        var check = HealthCheck()
        check.add { nil }
        #expect(check.response(accepting: true) == .text(200, "ok"))
        #expect(check.failures(accepting: true).isEmpty)
    }

    @Test("draining: 503 shutting down")
    func draining() {
        let response = HealthCheck().response(accepting: false)
        #expect(response.status == 503)
        #expect(response.bodyText == "shutting down\n")
    }

    @Test("a failing probe: 503 with its reason; several reasons share one line")
    func failingProbes() {
        var storageDown = true
        var check = HealthCheck(probes: [{ storageDown ? "storage: database is locked" : nil }])
        check.add { nil }
        check.add { "cluster: redis unreachable\n(two lines)" }
        let response = check.response(accepting: true)
        #expect(response.status == 503)
        #expect(response.bodyText == "storage: database is locked; cluster: redis unreachable (two lines)\n")
        storageDown = false
        #expect(check.failures(accepting: false) == ["shutting down", "cluster: redis unreachable\n(two lines)"])
    }

    @Test("/livez is 200 ok whatever the probes say")
    func live() {
        #expect(HealthCheck.liveResponse == .text(200, "ok"))
    }
}

@Suite("ServerAPIRoute")
struct ServerAPIRouteTests {
    func makeRouter(handle: @escaping (HTTPRequest) -> HTTPResponse = ServerAPIRoute.apiOff) -> HTTPRouter {
        let router = HTTPRouter()
        router.add(ServerAPIRoute.route(bodyLimit: 16, handle: handle))
        return router
    }

    @Test("refusals are the API's JSON errors: 405 INVALID_REQUEST, 413 MESSAGE_TOO_LARGE")
    func refusals() {
        let router = makeRouter()
        let wrongMethod = router.respond(to: HTTPRequest(method: .get, path: "/api/v1/publish"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.contentType == "application/json")
        #expect(wrongMethod.bodyText.contains("\"code\":\"INVALID_REQUEST\""))
        #expect(wrongMethod.bodyText.contains("\"ok\":false"))
        #expect(wrongMethod.headers == [HTTPHeaderField(name: "Allow", value: "POST")])
        let tooLarge = router.respond(to: HTTPRequest(method: .post, path: "/api/v1/publish", body: Array(repeating: 32, count: 17)))
        #expect(tooLarge.status == 413)
        #expect(tooLarge.bodyText.contains("\"code\":\"MESSAGE_TOO_LARGE\""))
    }

    @Test("with no handler plugged in, the API is off: 401 UNAUTHORIZED")
    func apiOff() {
        let response = makeRouter().respond(to: HTTPRequest(method: .post, path: "/api/v1/getInfo", body: Array("{}".utf8)))
        #expect(response.status == 401)
        #expect(response.bodyText.contains("\"code\":\"UNAUTHORIZED\""))
    }

    @Test("a handler gets the op, the headers and the body")
    func handlerGetsRequest() {
        let router = makeRouter { request in
            .text(200, "\(ServerAPIRoute.op(of: request)) \(request.authorization ?? "-") \(request.bodyText)")
        }
        let response = router.respond(to: HTTPRequest(
            method: .post, path: "/api/v1/publish", authorization: "Bearer k", body: Array("{\"a\":1}".utf8)))
        #expect(response.bodyText == "publish Bearer k {\"a\":1}")
    }
}

@Suite("ServerAPIRoute with keys")
struct ServerAPIRouteKeyTests {
    let key = "route-key-0123456789"

    func makeRouter(keys: [String]) -> HTTPRouter {
        var api = Configuration.API()
        api.keys = keys
        let router = HTTPRouter()
        router.add(ServerAPIRoute.route(bodyLimit: 16, keys: ServerAPIKeys(api, environment: [:])))
        return router
    }

    @Test("an accepted key hands the request off to the server, op and body intact")
    func acceptedKeyHandsOff() {
        let request = HTTPRequest(method: .post, path: "/api/v1/getInfo", authorization: "Bearer \(key)", body: Array("{}".utf8))
        guard case .handOff(let handed) = makeRouter(keys: [key]).answer(to: request) else {
            Issue.record("not handed off")
            return
        }
        #expect(handed.body == Array("{}".utf8))
        #expect(ServerAPIRoute.op(of: handed) == "getInfo")
        #expect(makeRouter(keys: [key]).respond(to: request).status == 500, "respond(to:) cannot answer a hand-off")
    }

    @Test("a wrong or missing key is 401 JSON; no key configured says the API is off")
    func refusedKeys() {
        for authorization in [nil, "Bearer nope-0123456789abcdef", "Basic \(key)"] {
            let response = makeRouter(keys: [key]).respond(to: HTTPRequest(method: .post, path: "/api/v1/getInfo", authorization: authorization))
            #expect(response.status == 401)
            #expect(response.contentType == "application/json")
            #expect(response.bodyText.contains("\"code\":\"UNAUTHORIZED\""))
        }
        let off = makeRouter(keys: []).respond(to: HTTPRequest(method: .post, path: "/api/v1/getInfo", authorization: "Bearer \(key)"))
        #expect(off.status == 401 && off.bodyText.contains("off"))
    }

    @Test("the method and the size are checked before the key; a combining mark after the prefix still routes")
    func orderOfChecks() {
        let router = makeRouter(keys: [key])
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/v1/getInfo")).status == 405)
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/api/v1/x", body: Array(repeating: 32, count: 17))).status == 413)
        let combining = HTTPRequest(method: .post, path: "/api/v1/\u{301}x", authorization: "Bearer \(key)")
        guard case .handOff(let handed) = router.answer(to: combining) else {
            Issue.record("not routed")
            return
        }
        #expect(ServerAPIRoute.op(of: handed) == "\u{301}x")
    }
}

extension HTTPRequest {
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}
