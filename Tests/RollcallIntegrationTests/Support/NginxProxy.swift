import Foundation
#if canImport(Glibc)
import Glibc
#endif
import RollcallTestSupport

/// Debian's nginx as a round-robin WebSocket and HTTP proxy on a free loopback port, in front
/// of the given upstream ports: its own config, prefix, logs and temp folders in a temporary
/// directory, `daemon off` and `master_process off` (one process, which the harness owns and
/// kills), so it needs no root and leaves nothing behind. Running as root works the same: without
/// a master process nginx never switches user.
final class NginxProxy: @unchecked Sendable {
    /// The loopback port nginx listens on.
    let port: Int
    /// The ports it balances over, in round-robin order.
    let upstreamPorts: [Int]
    private let directory: URL
    private var process: ChildProcess?

    /// The nginx binary: `$NGINX`, else `nginx` on `PATH`, else `/usr/sbin/nginx` (Debian's,
    /// which is not on a normal user's `PATH`).
    static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["NGINX"], !path.isEmpty { return path }
        if let found = ExternalCommand.which("nginx") { return found }
        return FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : nil
    }

    /// Writes the config, starts nginx and waits until its port accepts connections.
    init(upstreamPorts: [Int], startTimeout: TimeInterval = 10) throws {
        guard let binary = Self.binary else {
            throw HarnessError("nginx not found (`make deps` installs Debian's nginx, or set NGINX)")
        }
        self.upstreamPorts = upstreamPorts
        port = try LoopbackPort.free()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configURL = directory.appendingPathComponent("nginx.conf")
        try Self.config(port: port, upstreamPorts: upstreamPorts, directory: directory.path)
            .write(to: configURL, atomically: true, encoding: .utf8)
        let child = try ChildProcess(
            executable: binary,
            arguments: ["-p", directory.path + "/", "-c", configURL.path, "-e", directory.appendingPathComponent("error.log").path],
            directory: directory.path)
        process = child
        let deadline = Date(timeIntervalSinceNow: startTimeout)
        while !LoopbackPort.accepts(port) {
            guard child.status == nil, Date() < deadline else {
                let log = errorLog
                stop()
                throw HarnessError("nginx did not start on port \(port); stderr:\n\(child.output.stderrText)\nerror.log:\n\(log)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// `ws://127.0.0.1:PORT/v1` (or another path) through the proxy.
    func url(path: String = "/v1") -> String { "ws://127.0.0.1:\(port)\(path)" }

    /// nginx's error log so far (for failure messages).
    var errorLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// nginx's access log so far: one line per proxied request or WebSocket, naming the upstream.
    var accessLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
    }

    /// SIGKILL and wait for the exit (idempotent).
    func stop() {
        guard let process, process.status == nil else { return }
        process.send(SIGKILL)
        _ = process.waitForExit(timeout: 5)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The nginx.conf: round-robin upstream, WebSocket upgrade (HTTP/1.1, Upgrade and
    /// Connection headers), read timeout far above the broker's heartbeat, no buffering.
    static func config(port: Int, upstreamPorts: [Int], directory: String) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 1024; }
        http {
            log_format upstream '$remote_addr "$request" $status upstream=$upstream_addr';
            access_log \(directory)/access.log upstream;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            map $http_upgrade $connection_upgrade { default upgrade; '' close; }
            upstream rollcall {
        \(upstreamPorts.map { "        server 127.0.0.1:\($0);" }.joined(separator: "\n"))
            }
            server {
                listen 127.0.0.1:\(port);
                location / {
                    proxy_pass http://rollcall;
                    proxy_http_version 1.1;
                    proxy_set_header Upgrade $http_upgrade;
                    proxy_set_header Connection $connection_upgrade;
                    proxy_set_header Host $host;
                    proxy_read_timeout 1h;
                    proxy_send_timeout 1h;
                    proxy_buffering off;
                }
            }
        }

        """
    }
}
