import ArgumentParser
import RollcallClient
import RollcallProtocol

/// `rollcall-cli refresh NEW_TOKEN --user alice --token OLD_TOKEN`: logs in with the old
/// token, hands the broker the new one (`refresh`, PROTOCOL §3 1.1) on the same connection,
/// and prints the new expiry. Checks that an issuer's refreshed tokens are accepted; exits 1
/// with the broker's error (`UNAUTHORIZED`, `INVALID_REQUEST` in none mode) otherwise.
struct Refresh: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log in with --token, then refresh to NEW-TOKEN on the same connection; print the new expiry.",
        discussion: "Example: rollcall-cli refresh \"$(rollcall-cli token --secret-env S --user alice --ttl 600)\" --user alice --token \"$OLD\"")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The fresh token (same sub as the login's).") var newToken: String

    func run() throws {
        let session = try Session.open(global)
        let before = session.loginReply.result["expiresAt"]?.numberValue?.intValue
        let reply = try session.request(.refresh, ["token": .string(newToken)])
        if global.json {
            Output.line(reply.description)
        } else if reply.ok {
            let after = reply.result["expiresAt"]?.numberValue?.intValue
            Output.line("\(global.style.green("refreshed")): expires at \(Output.time(after)) (\(after.map(String.init) ?? "?")); was \(Output.time(before))")
        }
        session.finish()
        if !reply.ok { Output.fail("\(reply.errorCodeText ?? "UNKNOWN"): \(reply.errorMessage ?? "")", code: 1) }
    }
}
