#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Maps request paths to files under `http.staticDir`, refusing anything outside it.
///
/// A request path cannot climb out (`..`, `//`, `\\` refused), and a directory reached through a
/// symlink must resolve inside the root. The one exception: a *file* of the root's own folders may
/// be a symlink to a regular file elsewhere — the operator put it there. The demo uses this:
/// `examples/web/rollcall.js` links to the one copy of the client in `clients/js`.
struct StaticFiles {
    /// The resolved (symlink-free, absolute) root directory; nil when it does not exist.
    let root: String?

    /// Resolves `directory` once, at start.
    init(directory: String?) {
        guard let directory, let resolved = Self.realPath(directory) else {
            root = nil
            return
        }
        root = resolved
    }

    /// The file a request path names, or nil (not found, not a regular file, outside the root).
    /// `/` serves `index.html`.
    func file(for requestPath: String) -> String? {
        guard let root else { return nil }
        let path = requestPath == "/" ? "/index.html" : requestPath
        guard path.hasPrefix("/"), !path.contains(".."), !path.contains("\\"),
              !path.utf8.contains(0), !path.contains("//") else { return nil }
        let candidate = root + path
        guard let resolved = Self.realPath(candidate),
              resolved.hasPrefix(root + "/") || Self.isFileLink(candidate, inside: root) else { return nil }
        var info = stat()
        guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return resolved
    }

    /// The size in bytes of the file at `path`; nil when it cannot be read.
    static func size(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// The content type for a file name, by extension.
    static func contentType(for path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }

    /// Whether `path` is itself a symlink whose folder resolves to `root` or inside it.
    private static func isFileLink(_ path: String, inside root: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK,
              let slash = path.lastIndex(of: "/"),
              let folder = realPath(String(path[..<slash])) else { return false }
        return folder == root || folder.hasPrefix(root + "/")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
