// swift-tools-version:6.1
import PackageDescription

/// Targets that talk to libwebsockets' C callbacks keep the Swift 5 language mode:
/// all their state is confined to one service thread, which the compiler cannot see.
/// No unsafe flags here: SwiftPM refuses them in a package consumed by version, and these
/// settings reach the `RollcallClient` product (Tests/consumer proves it builds by version).
let cBridgeSettings: [SwiftSetting] = [.swiftLanguageMode(.v5)]

/// The broker's transport only, release builds: no runtime exclusivity checks (its state is
/// confined to the service thread). Measured with callgrind (BENCHMARKS.md, "Compiler flags"):
/// 7% fewer broker instructions on fan-out, 2% on a join storm — all of what `-Ounchecked`
/// gained, while bounds and overflow checks still trap. Nothing measurable on `rollcall`.
let brokerSettings: [SwiftSetting] = cBridgeSettings + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Rollcall",
    // The broker and the CLI need Linux (libwebsockets, io_uring, epoll). The client
    // library (`RollcallClient`) is portable: its async session speaks over URLSessionWebSocketTask
    // on these Apple platforms (declared, not built or tested here) and over libwebsockets on
    // Linux, where it is built and tested (docs/client.md, "Platforms").
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "rollcall", targets: ["rollcall"]),
        .executable(name: "rollcall-cli", targets: ["rollcall-cli"]),
        .library(name: "RollcallClient", targets: ["RollcallClient"]),
        // Not API: what the bench package (Benchmarks/, its own package) uses of ours beyond the
        // client. The listing bench drives a `Broker` in-process (RollcallCore), and its floors
        // are the broker's own io_uring batched send (CSendBatch) and lws write (CRollcallShim)
        // (docs/architecture.md, "The bench package").
        .library(name: "_RollcallBenchmarkSupport", targets: ["RollcallCore", "RollcallProtocol", "CSendBatch", "CRollcallShim"]),
    ],
    traits: [
        .trait(name: "LibWebSockets",
               description: "RollcallClient's libwebsockets transport and RollcallConnection on Linux; off, the client uses URLSession only"),
        .default(enabledTraits: ["LibWebSockets"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // 1.16: `LogHandler.log(event:)`, which the JSON log handler implements (log.format "json").
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // MARK: C
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .target(
            name: "CRollcallShim", dependencies: ["CLibWebSockets"],
            // OpenSSL (libwebsockets' TLS library) parses tls.certFile/keyFile before the context.
            linkerSettings: [.linkedLibrary("crypto")]
        ),

        // hiredis' command formatter and reply reader (cluster mode's Redis client, docs/cluster.md).
        .systemLibrary(
            name: "CHiredis",
            pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        .target(
            name: "CRedisShim", dependencies: ["CHiredis"],
            // The Redis transport: a socket on the broker's libev loop, TLS with OpenSSL 3 (the
            // library libwebsockets links too).
            linkerSettings: [.linkedLibrary("ev"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),

        // io_uring (Debian's liburing-dev): a broadcast's frames sent in one system call by the
        // broker (Sources/RollcallServer/BatchedSends.swift). Not a dependency of RollcallClient.
        .systemLibrary(
            name: "CLibURing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        .target(name: "CSendBatch", dependencies: ["CLibURing"]),

        // lws on libev's epoll loop (a foreign loop), shared by the broker and the client runtime.
        .target(name: "RollcallEventLoop", dependencies: ["CRollcallShim"], swiftSettings: cBridgeSettings),

        // MARK: Pure Swift
        .target(name: "RollcallProtocol"),
        .target(
            name: "RollcallCore",
            dependencies: [
                "RollcallProtocol",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RS256 (RSA PKCS#1 v1.5) for JWK Set keys (docs/authentication.md, "Why not jwt-kit").
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "RollcallStorage",
            dependencies: [
                "RollcallCore", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Redis (cluster mode)
        .target(
            name: "RollcallRedis",
            dependencies: [
                "CRedisShim", "RollcallEventLoop", "RollcallProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),

        // The Redis engine (cluster mode): presence, sessions and user status on Redis (the Lua
        // scripts, the key layout, delivery by seq, the reaper) and the node's link (heartbeats,
        // start checks, the store commands run on hiredis).
        .target(
            name: "RollcallRedisEngine",
            dependencies: [
                "RollcallCore", "RollcallProtocol", "RollcallRedis", "RollcallEventLoop",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),

        // MARK: libwebsockets
        .target(
            name: "RollcallServer",
            dependencies: [
                "RollcallCore", "RollcallStorage", "CRollcallShim", "CSendBatch", "RollcallEventLoop", "RollcallRedisEngine", "RollcallRedis",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: brokerSettings
        ),
        // The client library. libwebsockets (and its shim and loop) only on Linux with the
        // `LibWebSockets` trait; elsewhere the session uses URLSessionWebSocketTask.
        .target(
            name: "RollcallClient",
            dependencies: [
                "RollcallProtocol",
                .target(name: "CRollcallShim", condition: .when(platforms: [.linux], traits: ["LibWebSockets"])),
                .target(name: "RollcallEventLoop", condition: .when(platforms: [.linux], traits: ["LibWebSockets"])),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: cBridgeSettings
        ),

        // MARK: Executables
        .executableTarget(
            name: "rollcall",
            dependencies: [
                "RollcallServer", "RollcallStorage", "RollcallRedisEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: cBridgeSettings
        ),
        .executableTarget(
            name: "rollcall-cli",
            dependencies: [
                "RollcallClient", "RollcallCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: cBridgeSettings
        ),

        // libFuzzer target over frame decoding and request dispatch (docs/testing.md, `make fuzz`).
        // A plain build gives a corpus replayer; `-DROLLCALL_FUZZ -sanitize=fuzzer` the fuzzer.
        .executableTarget(
            name: "rollcall-fuzz",
            dependencies: ["RollcallCore", "RollcallProtocol"],
            path: "Fuzz/Sources/rollcall-fuzz"
        ),

        // MARK: Tests
        .testTarget(name: "RollcallProtocolTests", dependencies: ["RollcallProtocol"]),
        .testTarget(
            name: "RollcallCoreTests",
            dependencies: [
                "RollcallCore", "RollcallClient", "RollcallTestSupport",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The client library's pure parts (roster, typed events, the session's lifecycle and
        // channel machines, multicast buffers, the socket lifecycle), without sockets.
        .testTarget(name: "RollcallClientTests", dependencies: ["RollcallClient", "RollcallProtocol"]),
        // The transport's pure parts (connection lifecycle, HTTP routing, metrics), without sockets.
        .testTarget(
            name: "RollcallServerTests",
            dependencies: [
                "RollcallServer", "RollcallCore", "RollcallProtocol", "RollcallEventLoop", "RollcallRedis", "RollcallTestSupport", "CSendBatch",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(name: "RollcallStorageTests", dependencies: ["RollcallStorage", "RollcallCore", .product(name: "GRDB", package: "GRDB.swift")]),
        // Test support shared by test targets: a throwaway redis-server on a free loopback port,
        // child processes (posix_spawn, output read by plain threads: no dispatch source on a pipe).
        .target(
            name: "RollcallTestSupport",
            dependencies: [
                "RollcallEventLoop", "RollcallRedis",
                // Signing test tokens with RS256, ES256 and EdDSA (TestSigningKey).
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/Support/RollcallTestSupport",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "RollcallRedisTests",
            dependencies: ["RollcallRedis", "RollcallEventLoop", "RollcallTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Cluster mode in one process: brokers and ClusterLinks on one loop, one real redis-server.
        .testTarget(
            name: "RollcallClusterTests",
            dependencies: [
                "RollcallCore", "RollcallRedisEngine", "RollcallRedis", "RollcallEventLoop", "RollcallTestSupport",
                "RollcallClient", "RollcallProtocol", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "RollcallIntegrationTests",
            dependencies: [
                "RollcallClient", "RollcallProtocol", "RollcallCore", "RollcallRedisEngine", "RollcallTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: cBridgeSettings
        ),
    ]
)
