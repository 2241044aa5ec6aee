import CRollcallShim
import Foundation
import RollcallCore

/// The checks `tls.certFile` and `tls.keyFile` pass before the broker creates its lws
/// context, so that a missing, unreadable or invalid file stops the broker with a message
/// naming the key and the file instead of a bare "cannot create the context".
///
/// Each file must exist, be a readable regular file of at most ``maxFileBytes``, and hold
/// PEM that OpenSSL (the TLS library libwebsockets uses) parses: a certificate chain, and an
/// unencrypted private key that belongs to the chain's first certificate. Relative paths are
/// relative to the broker's working directory.
public enum TLSFiles {
    /// Largest accepted certificate or key file.
    public static let maxFileBytes = 1 << 20

    /// Checks `tls` (nothing to do when TLS is off); throws ``ServerError/Code/tlsFileInvalid``.
    public static func check(_ tls: Configuration.TLS) throws(ServerError) {
        guard let certFile = tls.certFile, let keyFile = tls.keyFile else { return }
        let certificate = try read(certFile, key: "tls.certFile")
        let privateKey = try read(keyFile, key: "tls.keyFile")
        var detail = [CChar](repeating: 0, count: 256)
        let problem = certificate.withUnsafeBytes { cert in
            privateKey.withUnsafeBytes { key in
                rollcall_tls_check_pem(cert.baseAddress, cert.count, key.baseAddress, key.count, &detail, detail.count)
            }
        }
        let reason = String(cString: detail)
        let because = reason.isEmpty ? "" : " (\(reason))"
        switch problem {
        case ROLLCALL_TLS_OK:
            return
        case ROLLCALL_TLS_BAD_CERTIFICATE:
            throw failure("tls.certFile", certFile, "is not a PEM certificate\(because)")
        case ROLLCALL_TLS_BAD_KEY:
            throw failure("tls.keyFile", keyFile, "is not an unencrypted PEM private key\(because)")
        default:
            throw failure("tls.keyFile", keyFile, "does not match the certificate in \(certFile)\(because)")
        }
    }

    /// The file's bytes, or an error naming `key` and `path` with the system's reason.
    static func read(_ path: String, key: String) throws(ServerError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw failure(key, path, "cannot be read (\(String(cString: strerror(errno))))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw failure(key, path, "cannot be read (\(String(cString: strerror(errno))))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw failure(key, path, "is not a regular file") }
        guard info.st_size <= maxFileBytes else { throw failure(key, path, "is larger than \(maxFileBytes) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure(key, path, "cannot be read (\(String(cString: strerror(errno))))") }
            if count == 0 { break }
            filled += count
        }
        guard filled > 0 else { throw failure(key, path, "is empty") }
        return Array(bytes[..<filled])
    }

    private static func failure(_ key: String, _ path: String, _ problem: String) -> ServerError {
        ServerError(.tlsFileInvalid, "\(key): \(path) \(problem)")
    }
}
