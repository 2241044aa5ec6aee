import Foundation

/// A throwaway certificate authority for TLS tests, made with the `openssl` command in a
/// temporary directory (removed at the end): a CA, a server certificate for `127.0.0.1` and
/// `localhost` it signed, a client certificate it signed, and a second CA with a server
/// certificate of its own (one the first CA does not vouch for). EC P-256 keys: quick to make.
public final class TestCertificates: @unchecked Sendable {
    /// The directory holding every file.
    public let directory: URL

    /// The CA's certificate (PEM): what `cluster.tls.caFile` names.
    public var caFile: String { path("ca.pem") }
    /// The server's certificate, signed by the CA (SANs `IP:127.0.0.1`, `DNS:localhost`).
    public var serverCert: String { path("server.pem") }
    /// The server's key.
    public var serverKey: String { path("server.key") }
    /// A client certificate signed by the CA (for mutual TLS).
    public var clientCert: String { path("client.pem") }
    /// The client's key.
    public var clientKey: String { path("client.key") }
    /// Another CA's certificate.
    public var otherCAFile: String { path("other-ca.pem") }
    /// A server certificate for `127.0.0.1` signed by the other CA: it does not verify against ``caFile``.
    public var otherServerCert: String { path("other-server.pem") }
    /// Its key.
    public var otherServerKey: String { path("other-server.key") }

    /// Makes every file; throws when `openssl` is missing or fails.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n".utf8)
            .write(to: directory.appendingPathComponent("leaf.ext"))
        for ca in ["ca", "other-ca"] {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-subj", "/CN=Rollcall test \(ca)", "-days", "2", "-keyout", "\(ca).key", "-out", "\(ca).pem"])
        }
        for (leaf, ca) in [("server", "ca"), ("client", "ca"), ("other-server", "other-ca")] {
            try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-subj", "/CN=\(leaf)", "-keyout", "\(leaf).key", "-out", "\(leaf).csr"])
            try openssl(["x509", "-req", "-in", "\(leaf).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key",
                         "-CAcreateserial", "-days", "2", "-extfile", "leaf.ext", "-out", "\(leaf).pem"])
        }
    }

    /// The path of `name` in the directory.
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func openssl(_ arguments: [String]) throws {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        guard let binary = (paths + ["/usr/bin"]).map({ "\($0)/openssl" }).first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw TestSupportError("the openssl command is needed (make deps installs it)")
        }
        let process = try ChildProcess(executable: binary, arguments: arguments, directory: directory.path)
        guard let status = process.waitForExit(timeout: 30) else {
            process.send(SIGKILL)
            throw TestSupportError("openssl \(arguments.first ?? "") did not finish within 30 s")
        }
        guard status == 0 else { throw TestSupportError("openssl \(arguments.joined(separator: " ")) failed: \(process.output.stderrText)") }
    }
}
