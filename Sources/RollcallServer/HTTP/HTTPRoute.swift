/// One entry of the ``HTTPRouter``: which paths and methods it takes, how large a body it
/// reads, how it answers, and how it words a refusal (plain text by default; the server API
/// answers in JSON, PROTOCOL §10).
public struct HTTPRoute {
    /// Which paths a route takes.
    public enum PathMatch: Sendable, Equatable {
        /// Exactly this path.
        case exact(String)
        /// Every path starting with this prefix (e.g. `/api/v1/`).
        case prefix(String)

        /// Compared byte by byte: `String`'s `==` and `hasPrefix` compare characters, so a
        /// combining mark right after `/api/v1/` would make the prefix not match.
        func matches(_ path: String) -> Bool {
            switch self {
            case .exact(let exact): path.utf8.elementsEqual(exact.utf8)
            case .prefix(let prefix): path.utf8.starts(with: prefix.utf8)
            }
        }
    }

    /// How a route answers a request: now, or by handing it to the server, which answers
    /// later on the same exchange (the server API's requests go into the broker's core).
    public enum Answer: Sendable, Equatable {
        /// This response, now.
        case response(HTTPResponse)
        /// The server answers later; the exchange stays open until it does.
        case handOff(HTTPRequest)
    }

    /// The paths the route takes.
    public let path: PathMatch
    /// The methods the route takes; GET implies HEAD (the same answer without its body).
    public let methods: Set<HTTPMethod>
    /// The largest body the route reads, in bytes (0: it takes no body).
    public let bodyLimit: Int
    /// Answers a request whose method is allowed and whose body is within the limit.
    public let answer: (HTTPRequest) -> Answer
    /// Words a refusal (405, 413) for this route.
    public let refuse: (HTTPRefusal) -> HTTPResponse

    /// A route for `path` and `methods`, reading bodies up to `bodyLimit` bytes.
    public init(
        _ path: PathMatch, methods: Set<HTTPMethod>, bodyLimit: Int = 0,
        refuse: @escaping (HTTPRefusal) -> HTTPResponse = { $0.plainResponse },
        handle: @escaping (HTTPRequest) -> HTTPResponse
    ) {
        self.init(path, methods: methods, bodyLimit: bodyLimit, refuse: refuse, answer: { .response(handle($0)) })
    }

    /// A route whose answers may be handed off to the server (``Answer/handOff(_:)``).
    public init(
        _ path: PathMatch, methods: Set<HTTPMethod>, bodyLimit: Int = 0,
        refuse: @escaping (HTTPRefusal) -> HTTPResponse = { $0.plainResponse },
        answer: @escaping (HTTPRequest) -> Answer
    ) {
        self.path = path
        self.methods = methods
        self.bodyLimit = max(0, bodyLimit)
        self.answer = answer
        self.refuse = refuse
    }

    /// True when the route takes `method` (HEAD wherever GET is taken).
    func allows(_ method: HTTPMethod) -> Bool {
        methods.contains(method) || (method == .head && methods.contains(.get))
    }
}
