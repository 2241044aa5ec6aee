// swift-tools-version:6.1
import PackageDescription

// A live roster with Rollcall's async Swift client; depends on the repository by path.
let package = Package(
    name: "live-roster",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "Rollcall", path: "../..")],
    targets: [
        .executableTarget(name: "live-roster", dependencies: [.product(name: "RollcallClient", package: "Rollcall")]),
    ]
)
