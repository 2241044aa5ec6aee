/// The broker's configuration (PROTOCOL §8). Every property has the documented default;
/// ``ConfigurationLoader`` fills it from `config.json` and validates it in one place.
/// Durations are seconds and may be fractional. The allowed range of every key and the rules
/// between keys are listed in `docs/configuration.md` and enforced by
/// ``ConfigurationLoader/validate(_:environment:)``; a value built in code is only known to be
/// usable after that check.
public struct Configuration: Sendable, Equatable {
    /// Where to listen.
    public struct Listen: Sendable, Equatable {
        /// Address to bind exactly. Default `127.0.0.1`.
        public var host = "127.0.0.1"
        /// TCP port; 0 picks a free one. Default 8080.
        public var port = 8080
        public init() {}
    }

    /// TLS files; both nil means plain `ws://`.
    public struct TLS: Sendable, Equatable {
        /// PEM certificate chain. Default nil.
        public var certFile: String? = nil
        /// PEM private key. Default nil.
        public var keyFile: String? = nil
        public init() {}
    }

    /// How logins are authenticated.
    public struct Auth: Sendable, Equatable {
        /// The accepted modes: `none` accepts any user id, `jwt` requires a token (HS256 with
        /// a secret, or RS256, ES256 and EdDSA with a key of a JWK Set).
        public enum Mode: String, Sendable, Equatable, CaseIterable { case none, jwt }
        /// `none` or `jwt`. Default `none`.
        public var mode: Mode = .none
        /// HS256 secret. Default nil.
        public var secret: String? = nil
        /// Environment variable holding the secret when `secret` is nil. Default `ROLLCALL_JWT_SECRET`.
        public var secretEnv: String? = "ROLLCALL_JWT_SECRET"
        /// *(1.2)* More HS256 secrets accepted at once (rotation): a token signed with the
        /// secret or with any of these verifies. Default `[]`.
        public var secrets: [String] = []
        /// *(1.2)* A JWK Set file (RFC 7517) whose public keys verify RS256, ES256 and EdDSA
        /// tokens; read at start and again within 5 s of a change. Default nil.
        public var jwksFile: String? = nil
        /// *(1.2)* An `http://` or `https://` URL of a JWK Set, fetched at start and every
        /// ``jwksRefreshSeconds``. Default nil.
        public var jwksUrl: String? = nil
        /// PEM file of the certificate authorities trusted for an `https` ``jwksUrl`` instead of
        /// the system's store (an identity provider behind a private CA). Not in PROTOCOL §8: an
        /// addition of this broker, like `webhooks.caFile`. Default nil.
        public var jwksCaFile: String? = nil
        /// *(1.2)* Seconds between two fetches of ``jwksUrl``. Default 300.
        public var jwksRefreshSeconds = 300.0
        /// Allow `mode: none` on a non-loopback address. Default false.
        public var allowInsecure = false
        /// Seconds of clock difference tolerated on a token's `exp` and `nbf`. Default 30.
        var clockSkewSeconds = 30.0
        /// Seconds before a token's `exp` that the `refreshRequired` event is sent (1.1). Default 60.
        public var refreshNoticeSeconds = 60.0
        /// Most bytes a token's `info` claim may have, encoded (1.1). Default 1024.
        public var maxInfoBytes = 1024
        public init() {}
    }

    /// The HTTP side of the port.
    public struct HTTP: Sendable, Equatable {
        /// Directory served at `/`; nil serves no files. Default `examples/web`.
        public var staticDir: String? = "examples/web"
        /// Directory of the operator's console, served at `/admin/` (`/admin` redirects there);
        /// nil serves no console. Default `examples/admin` (docs/operations.md, "Operator's console").
        public var adminDir: String? = "examples/admin"
        /// Browser origins allowed to upgrade; `*` allows all. Default `["*"]`.
        public var allowedOrigins: [String] = ["*"]
        /// Offer WebSocket compression (RFC 7692 `permessage-deflate`) to clients that ask for
        /// it. Default false: each compressing connection holds zlib state (docs/operations.md).
        public var permessageDeflate = false
        /// zlib `memLevel` (1–9) of each compressing connection's deflate stream. Default 8
        /// (zlib's and lws' default); lower levels shrink the hash table zlib clears for every
        /// connection (2^(memLevel+8) bytes) at some cost in compression (docs/operations.md).
        public var permessageDeflateMemLevel = 8
        /// Send a broadcast's frames to quiet connections in one io_uring submission instead
        /// of one `send` each, where the kernel allows io_uring and TLS is off. Default true
        /// (docs/transport.md, "Batched sends").
        public var batchedSends = true
        /// How long a busy connection's events wait to share a frame (docs/transport.md,
        /// "Coalescing"): 0 turns coalescing off, so every event is written at once. Default
        /// 0.004; at most 0.1. Latency and CPU of both settings: docs/configuration.md.
        public var coalesceWindowSeconds = 0.004
        /// How recent a frame makes a connection busy, so that its next events wait for the
        /// window: a connection sent more than one event per this many seconds. Default 0.016;
        /// at least `coalesceWindowSeconds`, at most 1.
        public var coalesceBusySeconds = 0.016
        public init() {}
    }

    /// WebSocket keep-alive.
    public struct Heartbeat: Sendable, Equatable {
        /// Seconds between pings. Default 10.
        public var intervalSeconds = 10.0
        /// Seconds of silence before an abnormal drop. Default 30.
        public var timeoutSeconds = 30.0
        public init() {}
    }

    /// Channel presence.
    public struct Presence: Sendable, Equatable {
        /// Largest occupancy that still gets instant events. Default 50.
        public var maxInstantEvents = 50
        /// Announce mode resumes at `maxInstantEvents - hysteresis`. Default 10.
        public var hysteresis = 10
        /// Seconds between interval events. Default 5.
        public var intervalSeconds = 5.0
        /// Seconds an abnormally dropped session is held. Default 30.
        public var timeoutSeconds = 30.0
        /// Members in a snapshot before it is truncated. Default 1000.
        public var snapshotMaxMembers = 1000
        public init() {}
    }

    /// Per-member channel state limits.
    public struct State: Sendable, Equatable {
        /// Keys per member after a merge. Default 32.
        public var maxKeys = 32
        /// UTF-8 bytes per key. Default 64.
        public var maxKeyBytes = 64
        /// UTF-8 bytes per value. Default 8192.
        public var maxValueBytes = 8192
        /// UTF-8 bytes of all keys and values after a merge. Default 32768.
        public var maxTotalBytes = 32768
        /// Channels with state held before a join, per session. Default 32.
        public var maxPendingChannels = 32
        public init() {}
    }

    /// A number of calls per window.
    public struct Rate: Sendable, Equatable {
        /// Calls allowed per window. Default 20.
        public var calls = 20
        /// Window length in seconds. Default 5.
        public var perSeconds = 5.0
        public init() {}
        public init(calls: Int, perSeconds: Double) { self.calls = calls; self.perSeconds = perSeconds }
    }

    /// IM-style user status.
    public struct UserStatus: Sendable, Equatable {
        /// UTF-8 bytes of a custom status. Default 64.
        public var customStatusMaxBytes = 64
        /// Seconds a custom status lives. Default 86400.
        public var customStatusTtlSeconds = 86400.0
        /// Clear the custom status when the user goes offline. Default false.
        package var clearCustomStatusOnOffline = false
        /// `setCustomStatus` calls per second per user. Default 1.
        public var customStatusPerSecond = 1.0
        /// Subscriptions a user may hold; the earliest are dropped past it. Default 3000.
        public var maxSubscriptionsPerUser = 3000
        /// Subscribers a user may have. Default 5000.
        public var maxSubscribersPerUser = 5000
        /// Shared budget of `getUserStatus` (others), `subscribeUserStatus`, `unsubscribeUserStatus`. Default 20 per 5 s.
        public var queryRate = Rate()
        public init() {}
    }

    /// Protocol limits.
    public struct Limits: Sendable, Equatable {
        /// Largest incoming message after reassembly. Default 65536.
        public var maxFrameBytes = 65536
        /// Largest encoded `publish` message. Default 32768.
        public var maxMessageBytes = 32768
        /// Channels one session may join. Default 256.
        public var maxChannelsPerSession = 256
        /// Sessions per user; the oldest is closed with 4409. Default 10.
        public var maxSessionsPerUser = 10
        /// Bytes queued for one session before it is cut with 1013. Default 4 MiB.
        public var maxOutboundBytes = 4_194_304
        /// Largest batched outbound frame. Default 16384.
        public var maxBatchBytes = 16384
        /// Seconds to log in before close 4408. Default 10.
        public var loginTimeoutSeconds = 10.0
        /// Sustained requests per second per session. Default 100.
        public var requestsPerSecond = 100.0
        /// Burst of requests per session. Default 200.
        public var requestBurst = 200
        /// Encoded `message` events kept for a held session until its resume (1.1); 0 keeps
        /// none. Default 65536.
        public var heldMessageBytes = 65536
        public init() {}
    }

    /// Durable data.
    public struct Storage: Sendable, Equatable {
        /// SQLite file; nil keeps data in memory. Default `rollcall.db`.
        public var path: String? = "rollcall.db"
        public init() {}
    }

    /// Cluster mode on Redis (PROTOCOL §9, 1.1): with `redis` set every broker on the same
    /// Redis and `keyPrefix` is one node of one cluster.
    public struct Cluster: Sendable, Equatable {
        /// `redis://[:password@]host:port[/db]`; nil runs one standalone process. Default nil.
        public var redis: String? = nil
        /// Prefix of every Redis key and pub/sub channel of the cluster. Default `rollcall:`.
        public var keyPrefix = "rollcall:"
        /// This node's id; nil picks a new random one at every start. Default nil.
        public var nodeId: String? = nil
        /// Seconds between a node's heartbeats. Default 1.
        public var heartbeatSeconds = 1.0
        /// Seconds of silence after which other nodes declare a node dead, and the most a
        /// request waits for Redis. Default 5.
        public var nodeTimeoutSeconds = 5.0
        /// *(1.2)* TLS to a `rediss://` or `rediss+sentinel://` Redis.
        public var tls = TLS()
        /// Not a config-file key: how many key groups the Redis engine spreads owners' keys over
        /// (docs/cluster.md, "Key groups"); nil: what the kind of `redis` needs (1 on one Redis,
        /// 1024 on Redis Cluster). Tests set it to lay keys out as on Redis Cluster on one Redis.
        public var keyGroupCount: Int? = nil
        public init() {}

        /// `cluster.tls` *(1.2)*: how links to a `rediss` Redis verify the server and present
        /// themselves (docs/cluster.md, "Managed Redis with TLS").
        public struct TLS: Sendable, Equatable {
            /// PEM CA file the server's certificate must chain to; nil: the system's store. Default nil.
            public var caFile: String? = nil
            /// PEM client certificate for mutual TLS (with `keyFile`). Default nil.
            public var certFile: String? = nil
            /// PEM private key of `certFile`. Default nil.
            public var keyFile: String? = nil
            /// The name the server's certificate must carry; nil: the host the link goes to. Default nil.
            public var serverName: String? = nil
            public init() {}

            /// True when any key is set.
            public var isSet: Bool { caFile != nil || certFile != nil || keyFile != nil || serverName != nil }
        }

        /// True when the broker runs as a node of a cluster.
        public var isEnabled: Bool { redis != nil }
    }

    /// Logging.
    public struct Log: Sendable, Equatable {
        /// `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`. Default `info`.
        public var level = "info"
        /// *(1.2)* `text` (the human format) or `json` (one JSON object per line: `ts`, `level`,
        /// `msg` and the message's metadata, for log collectors). Default `text`.
        public var format = "text"
        public init() {}
    }

    /// The server API (PROTOCOL §10, 1.1): the bearer keys it accepts. No key: the API is off
    /// and answers 401.
    public struct API: Sendable, Equatable {
        /// Accepted keys, each at least ``minimumKeyBytes`` bytes of printable ASCII. Default `[]`.
        public var keys: [String] = []
        /// Environment variable holding one more key; nil reads none. Default `ROLLCALL_API_KEY`.
        public var keyEnv: String? = "ROLLCALL_API_KEY"
        /// The shortest key accepted, in bytes (16).
        public static let minimumKeyBytes = 16
        public init() {}
    }

    public var listen = Listen()
    public var tls = TLS()
    public var auth = Auth()
    public var http = HTTP()
    public var heartbeat = Heartbeat()
    public var presence = Presence()
    public var state = State()
    public var userStatus = UserStatus()
    public var limits = Limits()
    public var storage = Storage()
    public var log = Log()
    public var cluster = Cluster()
    /// Webhooks to the application's backend (PROTOCOL §11, 1.1); off while `url` is nil.
    public var webhooks = Webhooks()
    public var api = API()

    /// Every default.
    public init() {}
}
