import Foundation
import RollcallTestSupport

/// An https server in Python's standard library for a test: a self-signed certificate made
/// with `openssl` for `subjectAltName` (the CA file a broker is given is the certificate
/// itself), and `handler` — the body of a `BaseHTTPRequestHandler` subclass, indented four
/// spaces — serving on a free loopback port. Extra `arguments` reach the script as
/// `sys.argv[3…]`. Killed when released.
final class TLSPythonServer {
    let process: ChildProcess
    let port: Int
    let directory: URL
    /// The server's certificate (PEM): a broker's CA file for it.
    var cert: String { directory.appendingPathComponent("cert.pem").path }
    var output: OutputCollector { process.output }

    init(subjectAltName: String, handler: String, arguments: [String] = []) throws {
        guard let openssl = ExternalCommand.which("openssl") else { throw HarnessError("the openssl command is needed") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let made = try ExternalCommand.run(openssl, [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=rollcall-test", "-days", "1",
            "-addext", "subjectAltName=\(subjectAltName)", "-keyout", key, "-out", certificate,
        ])
        guard made.status == 0 else { throw HarnessError("openssl req failed: \(made.stderr)") }
        let script = directory.appendingPathComponent("server.py")
        let source = """
            import http.server, ssl, sys
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def log_message(self, *args): pass
            \(handler)
            server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[1], sys.argv[2])
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print("listening on 127.0.0.1:%d" % server.server_port, flush=True)
            server.serve_forever()
            """
        try Data(source.utf8).write(to: script)
        process = try ChildProcess(executable: "/usr/bin/env", arguments: ["python3", script.path, certificate, key] + arguments,
                                   directory: BrokerProcess.packageRoot.path)
        guard let port = process.output.waitForListeningPort(prefix: "listening on ", timeout: 15) else {
            process.send(SIGKILL)
            throw HarnessError("the https server did not start: \(process.output.stderrText)")
        }
        self.port = port
    }

    deinit {
        process.send(SIGKILL)
        _ = process.waitForExit(timeout: 5)
        try? FileManager.default.removeItem(at: directory)
    }
}
