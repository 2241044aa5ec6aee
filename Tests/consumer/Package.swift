// swift-tools-version:6.1
// A stand-in for an app that uses Rollcall's client library as a versioned dependency
// (`make test-consumer`, Tests/consumer/consumer-check.sh). SwiftPM refuses unsafe flags in
// packages consumed by version, so this build fails if any target RollcallClient needs has one.
import Foundation
import PackageDescription

/// A tagged clone of the commit under test, made by consumer-check.sh.
let rollcallURL = ProcessInfo.processInfo.environment["ROLLCALL_PACKAGE_URL"] ?? "file:///tmp/rollcall-consumer/Rollcall"

let package = Package(
    name: "RollcallConsumer",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: rollcallURL, from: "1.2.0"),
    ],
    targets: [
        .executableTarget(
            name: "rollcall-consumer",
            dependencies: [.product(name: "RollcallClient", package: "Rollcall")]
        ),
    ]
)
