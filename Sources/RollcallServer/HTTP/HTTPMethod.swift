/// The request methods the broker tells apart. lws names the method by which URI token it
/// filled (`WSI_TOKEN_GET_URI`, `WSI_TOKEN_POST_URI`, …); ``other`` is any it did not.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET"
    case head = "HEAD"
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
    case options = "OPTIONS"
    case other = "OTHER"

    /// True for the methods whose request may carry a body the router reads.
    var carriesBody: Bool { self == .post || self == .put || self == .patch }
}
