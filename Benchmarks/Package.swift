// swift-tools-version:6.1
import PackageDescription

/// The bench, `rollcall-bench`: a package of its own that depends on Rollcall by path, so the
/// root package builds the broker, the CLI and the client library only. Build it from here
/// (`swift build -c release --package-path Benchmarks`, or `make release` at the root); its
/// binary is `Benchmarks/.build/release/rollcall-bench`. Scenarios and figures: BENCHMARKS.md.
let package = Package(
    name: "RollcallBenchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "rollcall-bench", targets: ["rollcall-bench"]),
    ],
    dependencies: [
        // The repository's root package. `name:` keeps the product references below valid
        // whatever the clone's folder is called (a path dependency's identity is its folder's name).
        .package(name: "Rollcall", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // epoll for the bench's raw client sockets (Support/RawSocketPool.swift).
        .target(name: "CBenchEpoll"),
        // Raw inflate (system zlib) for the plain-socket clients with `--deflate`
        // (permessage-deflate, Support/WebSocketFrameScanner.swift).
        .target(name: "CBenchZlib", linkerSettings: [.linkedLibrary("z")]),

        .executableTarget(
            name: "rollcall-bench",
            dependencies: [
                "CBenchEpoll", "CBenchZlib",
                .product(name: "RollcallClient", package: "Rollcall"),
                // RollcallCore, RollcallProtocol and the broker's send shims (the floors).
                .product(name: "_RollcallBenchmarkSupport", package: "Rollcall"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Its lws floor runs libwebsockets' callbacks on one service thread, as the broker's
            // transport does: the Swift 5 language mode, like the root's C-bridging targets.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
