import RollcallProtocol

/// What a handled request is called in metrics (`op` of `rollcall_request_duration_seconds`):
/// a closed set, so the page cannot grow with names a client makes up.
public enum RequestLabel: Hashable, Sendable {
    /// A WebSocket request naming an op of the protocol.
    case op(Op)
    /// A request frame that could not be decoded (not JSON, no `op`, …).
    case invalid
    /// A request naming an op the protocol does not have (`UNKNOWN_OP`).
    case unknown
    /// A server API request (PROTOCOL §10); nil: an op the API does not have.
    case api(ServerAPIOp?)

    /// The label's text: the op's name, `invalid`, `unknown`, `api.<op>` or `api.unknown`.
    public var text: String {
        switch self {
        case .op(let op): op.rawValue
        case .invalid: "invalid"
        case .unknown: "unknown"
        case .api(let op?): "api." + op.rawValue
        case .api(nil): "api.unknown"
        }
    }
}
