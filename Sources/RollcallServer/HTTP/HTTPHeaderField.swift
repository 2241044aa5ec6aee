/// One header field of an ``HTTPResponse`` beyond the ones every answer has (status, content
/// type, length, `Cache-Control`): `Allow` on a 405, `Location` on a redirect.
public struct HTTPHeaderField: Sendable, Equatable {
    /// The field name as HTTP spells it (`Allow`); written in lowercase.
    public var name: String
    /// The field value.
    public var value: String

    /// `Allow` listing `methods` in a fixed order, HEAD wherever GET is (RFC 9110 §10.2.1:
    /// a 405 must carry it).
    public static func allow(_ methods: Set<HTTPMethod>) -> HTTPHeaderField {
        var listed = methods
        if listed.contains(.get) { listed.insert(.head) }
        let names = HTTPMethod.allCases.filter { $0 != .other && listed.contains($0) }.map(\.rawValue)
        return HTTPHeaderField(name: "Allow", value: names.joined(separator: ", "))
    }

    /// `Location` for a redirect; a relative reference resolves against the request's URL.
    public static func location(_ target: String) -> HTTPHeaderField {
        HTTPHeaderField(name: "Location", value: target)
    }
}
