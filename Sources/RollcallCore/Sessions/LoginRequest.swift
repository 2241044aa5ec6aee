import RollcallProtocol

/// `login {userId, platform?, token?, customStatus?, presenceTimeout?, resumeToken?}`
/// (PROTOCOL §3), decoded and validated before anything is looked up.
package struct LoginRequest: Sendable {
    package let userId: Name
    package let platform: Platform
    let token: String?
    /// Length is checked by the user-status engine (`CUSTOM_STATUS_TOO_LONG`).
    package let customStatus: String?
    /// As sent; clamped to [5, 300] by the broker.
    package let presenceTimeoutSeconds: Double?
    package let resumeToken: String?

    init(_ request: Request) throws(BrokerError) {
        userId = try request.name("userId")
        let platformName = try request.optionalString("platform") ?? Platform.other.rawValue
        guard let platform = Platform(rawValue: platformName) else {
            throw BrokerError(.invalidArgument, "platform must be one of " + Platform.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.platform = platform
        token = try request.optionalString("token")
        customStatus = try request.optionalString("customStatus")
        presenceTimeoutSeconds = try request.optionalNumber("presenceTimeout")
        resumeToken = try request.optionalString("resumeToken")
    }
}
