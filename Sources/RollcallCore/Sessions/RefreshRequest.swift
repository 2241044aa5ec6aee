/// `refresh {token}` (PROTOCOL §3, 1.1), decoded: a missing or non-string token is
/// `INVALID_REQUEST` (a wrong argument type), never `UNAUTHORIZED`.
package struct RefreshRequest: Sendable {
    let token: String

    init(_ request: Request) throws(BrokerError) {
        token = try request.string("token")
    }
}
