import Foundation
import RollcallProtocol

/// A server API call over a raw socket (PROTOCOL §10): `POST /api/v1/<op>` with a bearer key
/// and a JSON body; the answer's status and parsed JSON.
enum ServerAPIRequest {
    /// The key every test broker with the API on is given.
    static let key = "integration-key-0123456789"

    /// The `api` config section that turns the API on with ``key``.
    static let config: [String: Any] = ["api": ["keys": [key]]]

    /// Sends one request on a new connection; `body` is sent as is.
    static func send(port: Int, method: String = "POST", path: String, key: String? = ServerAPIRequest.key,
                     body: [UInt8], timeout: TimeInterval = 10) throws -> (status: Int, answer: JSON) {
        let socket = try RawSocket(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        try socket.send(Array(head.utf8) + body)
        let response = try RawHTTP.readResponse(socket, timeout: timeout)
        guard response.headers["content-type"] == "application/json" else {
            throw HarnessError("\(path): content type \(response.headers["content-type"] ?? "none")")
        }
        return (response.status, try JSONParser.parse(response.body))
    }

    /// `POST /api/v1/<op>` with `body` encoded.
    static func call(port: Int, _ op: String, _ body: JSON = [:], key: String? = ServerAPIRequest.key) throws -> (status: Int, answer: JSON) {
        try send(port: port, path: "/api/v1/\(op)", key: key, body: body.encoded())
    }

    /// The result of a call that must succeed.
    static func ok(port: Int, _ op: String, _ body: JSON = [:]) throws -> JSON {
        let (status, answer) = try call(port: port, op, body)
        guard status == 200, answer["ok"] == .bool(true), let result = answer["result"] else {
            throw HarnessError("\(op) failed: \(status) \(answer.compactString)")
        }
        return result
    }
}
