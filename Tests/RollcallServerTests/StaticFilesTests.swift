#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RollcallServer
import Testing

@Suite("StaticFiles")
struct StaticFilesTests {
    /// A temporary tree: `root/index.html`, `root/sub/page.html`, `outside/client.js`,
    /// `outside/secret/key`, `root/client.js → ../outside/client.js` (a file link) and
    /// `root/linked → ../outside/secret` (a directory link).
    static func makeTree() throws -> (base: String, files: StaticFiles) {
        var template = Array("/tmp/rollcall-static-XXXXXX".utf8CString)
        let base = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        for folder in ["root", "root/sub", "outside", "outside/secret"] { mkdir(base + "/" + folder, 0o755) }
        for file in ["root/index.html", "root/sub/page.html", "outside/client.js", "outside/secret/key"] {
            let handle = try #require(fopen(base + "/" + file, "w"))
            fputs("x", handle)
            fclose(handle)
        }
        symlink("../outside/client.js", base + "/root/client.js")
        symlink("../outside/secret", base + "/root/linked")
        return (base, StaticFiles(directory: base + "/root"))
    }

    static func remove(_ base: String) {
        for file in ["root/client.js", "root/linked", "root/index.html", "root/sub/page.html", "outside/client.js", "outside/secret/key"] {
            unlink(base + "/" + file)
        }
        for folder in ["root/sub", "root", "outside/secret", "outside", ""] { rmdir(base + "/" + folder) }
    }

    @Test("files under the root are served, `/` is index.html, climbing out is refused")
    func plainFiles() throws {
        let (base, files) = try Self.makeTree()
        defer { Self.remove(base) }
        #expect(files.file(for: "/")?.hasSuffix("/root/index.html") == true)
        #expect(files.file(for: "/sub/page.html")?.hasSuffix("/root/sub/page.html") == true)
        #expect(files.file(for: "/../outside/client.js") == nil)
        #expect(files.file(for: "/missing.js") == nil)
        #expect(files.file(for: "/sub") == nil)
    }

    @Test("a file of the root that links elsewhere is served; a linked directory is not followed")
    func symlinks() throws {
        let (base, files) = try Self.makeTree()
        defer { Self.remove(base) }
        #expect(files.file(for: "/client.js")?.hasSuffix("/outside/client.js") == true)
        #expect(files.file(for: "/linked/key") == nil)
        #expect(files.file(for: "/linked") == nil)
    }
}
