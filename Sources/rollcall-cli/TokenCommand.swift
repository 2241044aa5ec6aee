import ArgumentParser
import Foundation
import RollcallCore
import RollcallProtocol

/// `rollcall-cli token --secret-env NAME --user alice [--channels 'room:*' ...] [--users 'team:*' ...]
/// [--info '{"name":"Alice"}'] [--ttl 3600]`:
/// mints an HS256 login token for development (docs/authentication.md). The secret is read
/// from the environment variable NAME, never from the command line (which other users of
/// the machine can see in the process list).
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mint an HS256 login token (development). Prints the token.",
        discussion: "Example: ROLLCALL_JWT_SECRET=... rollcall-cli token --secret-env ROLLCALL_JWT_SECRET --user alice --channels 'room:*'")

    @Option(name: .customLong("secret-env"), help: "Environment variable holding the HS256 secret (same as the broker's auth.secretEnv).")
    var secretEnv: String

    @Option(help: "The token's subject: the user id it logs in as.")
    var user: String

    @Option(parsing: .upToNextOption, help: "Channel glob patterns the token allows for join/publish/setState (e.g. 'room:*'); omit for every channel.")
    var channels: [String] = []

    @Option(parsing: .upToNextOption, help: "User id glob patterns whose status the token may read (getUserStatus, subscribeUserStatus, another user's getUserChannels); omit for every user.")
    var users: [String] = []

    @Option(help: "A JSON object the broker shows with the user in presence listings (e.g. '{\"name\":\"Alice\"}'); at most the broker's auth.maxInfoBytes encoded.")
    var info: String?

    @Option(help: "Seconds the token stays valid (1...31536000); a short one (e.g. 20) shows refreshRequired and expiry.")
    var ttl: Int = 3600

    func validate() throws {
        guard Name(user) != nil else {
            throw ValidationError("--user must be 1-128 bytes of UTF-8 without control characters")
        }
        guard (1...31_536_000).contains(ttl) else { throw ValidationError("--ttl must be from 1 to 31536000 seconds") }
        for pattern in channels where pattern.isEmpty || pattern.utf8.count > Name.maxBytes {
            throw ValidationError("--channels patterns must be 1-\(Name.maxBytes) bytes (got \"\(pattern)\")")
        }
        for pattern in users where pattern.isEmpty || pattern.utf8.count > Name.maxBytes {
            throw ValidationError("--users patterns must be 1-\(Name.maxBytes) bytes (got \"\(pattern)\")")
        }
        if let info, infoObject(info) == nil { throw ValidationError("--info must be a JSON object, e.g. '{\"name\":\"Alice\"}'") }
    }

    /// `text` parsed as a JSON object, or nil.
    private func infoObject(_ text: String) -> JSONObject? {
        (try? JSONParser.parse(Array(text.utf8)))?.objectValue
    }

    func run() throws {
        guard let secret = ProcessInfo.processInfo.environment[secretEnv], !secret.isEmpty else {
            Output.fail("the environment variable \(secretEnv) is not set or empty; it must hold the HS256 secret", code: 1)
        }
        let token = JWTMinter.mint(
            secret: secret, userId: user, channels: channels.isEmpty ? nil : channels, users: users.isEmpty ? nil : users,
            info: info.flatMap(infoObject), ttlSeconds: ttl, now: SystemClock().now)
        Output.line(token)
    }
}
