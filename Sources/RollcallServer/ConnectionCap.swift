#if canImport(Glibc)
import Glibc
#endif

/// The connection cap: how many connections the broker serves at once, derived from the
/// process's open-file limit so that `accept` never fails for lack of descriptors (lws would
/// otherwise retry the readable listening socket forever, logging `accept: Too many open files`).
///
/// At start the soft `RLIMIT_NOFILE` is raised to the hard limit (at most ``raiseCeiling``).
/// Then, counting every accepted socket (WebSocket, HTTP, in TLS or HTTP handshake) plus every
/// static file being sent:
/// - up to ``limit`` descriptors: served normally;
/// - above it: a WebSocket upgrade or a static file request is answered `503 Service
///   Unavailable` (`too many connections`) and the connection closed; `/healthz` and
///   `/metrics` are still answered so the broker can be watched while full;
/// - at ``hardLimit``: a new TCP connection is closed as soon as it is accepted, before any
///   byte is read (the 503 band is full of connections that have not sent a request yet).
/// The remaining ``reserve`` − ``refusalBand`` descriptors are for everything else the
/// process opens: standard streams, listening sockets, lws' wake-up pipe, the SQLite files.
/// See `docs/security.md`.
public struct ConnectionCap: Sendable, Equatable {
    /// Descriptors kept back from the open-file limit.
    public static let reserve = 64
    /// Descriptors, out of the reserve, for connections that are answered 503.
    public static let refusalBand = 32
    /// The soft open-file limit is raised at most this far (`RLIM_INFINITY` is `rlim_t.max` on Linux).
    public static let raiseCeiling = 1 << 20

    /// The soft open-file limit the cap derives from.
    public let descriptorLimit: Int
    /// Connections (and file transfers) served at once; above it, 503.
    public let limit: Int

    /// A cap for a process whose soft open-file limit is `descriptorLimit`.
    public init(descriptorLimit: Int) {
        self.descriptorLimit = descriptorLimit
        self.limit = max(1, descriptorLimit - Self.reserve)
    }

    /// Accepted sockets beyond which a new one is closed at once.
    public var hardLimit: Int { limit + Self.refusalBand }

    /// Raises the soft open-file limit to the hard limit (at most ``raiseCeiling``) and
    /// returns the soft limit in effect afterwards.
    public static func raiseDescriptorLimit() -> Int {
        var limits = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1024 }
        let ceiling = rlim_t(raiseCeiling)
        let target = limits.rlim_max == rlim_t.max ? ceiling : min(limits.rlim_max, ceiling)
        if limits.rlim_cur == rlim_t.max || limits.rlim_cur < target {
            var raised = limits
            raised.rlim_cur = target
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        if limits.rlim_cur == rlim_t.max { return raiseCeiling }
        return Int(min(limits.rlim_cur, rlim_t(Int32.max)))
    }
}
