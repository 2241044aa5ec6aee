/// The operator's console (`http.adminDir`, docs/operations.md, "Operator's console"): the
/// folder's files under `/admin/` (`/admin/` itself is its `index.html`), and `/admin`
/// redirected to `/admin/` so that the page's relative links resolve. GET and HEAD only; the
/// page does everything else through the server API with the key the operator types in.
public enum AdminConsoleRoute {
    /// Where the console is served.
    public static let path = "/admin"

    /// The two routes; `serve` answers a path inside the folder (`/` for its index).
    public static func routes(serve: @escaping (String) -> HTTPResponse) -> [HTTPRoute] {
        [
            // Relative, so that it resolves under whatever prefix a proxy puts in front.
            HTTPRoute(.exact(path), methods: [.get]) { _ in .redirect(to: "admin/") },
            HTTPRoute(.prefix(path + "/"), methods: [.get]) { request in
                serve(String(decoding: request.path.utf8.dropFirst(path.utf8.count), as: UTF8.self))
            },
        ]
    }
}
