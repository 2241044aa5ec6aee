import CRedisShim
import Foundation

/// `cluster.tls` (PROTOCOL §9): how links to a `rediss://` Redis (and its sentinels, with
/// `rediss+sentinel://`; every node, with `rediss+cluster://`) verify the server and present
/// themselves.
public struct RedisTLSSettings: Equatable, Sendable {
    /// PEM file of the CA(s) the server's certificate must chain to; nil: the system's store.
    public var caFile: String?
    /// PEM client certificate (chain) for mutual TLS; nil: none. Only with ``keyFile``.
    public var certFile: String?
    /// PEM private key of ``certFile``.
    public var keyFile: String?
    /// The name the server's certificate must carry; nil: the host the link goes to as it was
    /// named (the URL's host, for a master behind Sentinel the host the sentinels announce, for
    /// a Redis Cluster's master the host its slot map names).
    /// An IP address is checked against the certificate's IP SANs.
    public var serverName: String?

    /// Settings from their parts (all nil: the system's store, no client certificate).
    public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.serverName = serverName
    }
}

/// A loaded TLS client configuration (an OpenSSL `SSL_CTX`), made once at start from
/// ``RedisTLSSettings`` and shared by every link of a node. Throws, naming the key, when a
/// file cannot be read or the key does not match the certificate.
public final class RedisTLSContext {
    /// The settings it was made from.
    public let settings: RedisTLSSettings
    let pointer: OpaquePointer

    /// What one link needs: the context and the name to check.
    struct Link {
        let context: RedisTLSContext
        let serverName: String
    }

    /// Loads `settings`; throws ``RedisError/Code/invalidTLS`` whose message names the
    /// `cluster.tls` key at fault.
    public init(settings: RedisTLSSettings) throws {
        if (settings.certFile == nil) != (settings.keyFile == nil) {
            let missing = settings.certFile == nil ? "certFile" : "keyFile"
            let given = settings.certFile == nil ? "keyFile" : "certFile"
            throw RedisError(.invalidTLS, "cluster.tls.\(missing): required when cluster.tls.\(given) is set")
        }
        for (key, path) in [("caFile", settings.caFile), ("certFile", settings.certFile), ("keyFile", settings.keyFile)] {
            guard let path else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw RedisError(.invalidTLS, "cluster.tls.\(key): \(path) cannot be read")
            }
        }
        if let name = settings.serverName, name.isEmpty || name.contains(where: { $0.isWhitespace }) {
            throw RedisError(.invalidTLS, "cluster.tls.serverName: \"\(name)\" is not a host name or IP address")
        }
        var error = [CChar](repeating: 0, count: 512)
        guard let pointer = rollcall_tls_new(settings.caFile, settings.certFile, settings.keyFile, &error, error.count) else {
            let text = String(cString: error)
            let key = text.contains("keyFile") ? "keyFile" : text.contains("certFile") ? "certFile" : "caFile"
            throw RedisError(.invalidTLS, "cluster.tls.\(key): \(text)")
        }
        self.settings = settings
        self.pointer = pointer
    }

    deinit { rollcall_tls_free(pointer) }

    /// What a link to `host` (as it was named, before it was resolved) checks.
    func link(to host: String) -> Link {
        Link(context: self, serverName: settings.serverName ?? host)
    }
}
