import Foundation
import RollcallCore
@testable import RollcallServer
import RollcallTestSupport
import Testing

/// The transport's side of JWK Sets (PROTOCOL §3, 1.2) without sockets: which documents
/// replace the keys (``KeySetTracker``), the file watcher on real files in a temporary
/// folder (``KeyFileWatcher``), and the `/metrics` series.
@Suite("Key sets: tracker, file watcher, metrics")
struct KeySetTests {
    static let first = TestSigningKey.rsa(kid: "first")
    static let second = TestSigningKey.ed25519(kid: "second")

    private func document(_ keys: [TestSigningKey]) -> [UInt8] { Array(TestSigningKey.jwks(keys).utf8) }

    /// A fresh temporary folder, removed by the caller's `defer`.
    private func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a set that parses replaces the keys; one that does not, or holds no usable key, keeps them and counts")
    func tracker() throws {
        var tracker = KeySetTracker(source: .url, location: "http://127.0.0.1:9/jwks")
        guard case .use(let set, changed: true) = tracker.received(document([Self.first])) else { Issue.record("not used"); return }
        #expect(set.usableKids == ["first"])
        #expect(tracker.describe(set) == "auth.jwksUrl http://127.0.0.1:9/jwks: 1 usable keys (kid first)")
        guard case .use(_, changed: false) = tracker.received(document([Self.first])) else { Issue.record("same document: not unchanged"); return }
        guard case .keep(let message) = tracker.received(Array("{\"keys\":[]}".utf8)) else { Issue.record("empty set used"); return }
        #expect(message == #"auth.jwksUrl http://127.0.0.1:9/jwks: no usable key: "keys" is empty; the 1 keys in force stay"#)
        guard case .keep(let garbage) = tracker.received(Array("<html>".utf8)) else { Issue.record("garbage used"); return }
        #expect(garbage.hasPrefix("auth.jwksUrl http://127.0.0.1:9/jwks: not JSON"))
        #expect(tracker.failed("answered HTTP 503, not 200").hasSuffix("answered HTTP 503, not 200; the 1 keys in force stay"))
        guard case .use(let both, changed: true) = tracker.received(document([Self.first, Self.second])) else { Issue.record("not used"); return }
        #expect(both.usableKids == ["first", "second"])
        #expect((tracker.refreshes, tracker.failures, tracker.usableKeys) == (3, 3, 2))
    }

    @Test("an unusable key is named in the log line of the set that holds it")
    func describesLeftOutKeys() throws {
        var tracker = KeySetTracker(source: .file, location: "/etc/rollcall/jwks.json")
        let text = #"{"keys":[\#(Self.first.jwk()),{"kty":"EC","crv":"P-521","kid":"big"}]}"#
        guard case .use(let set, _) = tracker.received(Array(text.utf8)) else { Issue.record("not used"); return }
        #expect(tracker.describe(set) == #"auth.jwksFile /etc/rollcall/jwks.json: 1 usable keys (kid first); left out: key "big" (EC P-521): crv "P-521" is not accepted; ES256 needs P-256"#)
    }

    @Test("the file at start: a missing file, one that does not parse, or one with no usable key stops the broker, naming auth.jwksFile")
    func fileAtStart() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jwks.json").path
        for (content, mentions) in [(nil as String?, "cannot be opened (No such file or directory)"), ("{", "not JSON"),
                                    (#"{"keys":[{"kty":"oct","kid":"x"}]}"#, "no usable key")] {
            if let content { try Data(content.utf8).write(to: URL(fileURLWithPath: path)) }
            do {
                _ = try KeyFileWatcher.start(path: path)
                Issue.record("started with \(content ?? "no file")")
            } catch {
                #expect(error.code == .keySetUnavailable)
                #expect(error.message.hasPrefix("auth.jwksFile \(path): "), "\(error.message)")
                #expect(error.message.contains(mentions), "\(error.message)")
            }
        }
        try Data(TestSigningKey.jwks([Self.first]).utf8).write(to: URL(fileURLWithPath: path))
        #expect(try KeyFileWatcher.start(path: path).set.usableKids == ["first"])
        var auth = Configuration.Auth()
        auth.jwksFile = path + ".missing"
        #expect(throws: Never.self) { try KeySetFiles.check(auth) }  // mode none: not read
        auth.mode = .jwt
        #expect(throws: ServerError.self) { try KeySetFiles.check(auth) }
    }

    @Test("polls: nothing while the file is unchanged; an edit in place, a rename over it, garbage and its removal are each seen once")
    func filePolls() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("jwks.json")
        try Data(TestSigningKey.jwks([Self.first]).utf8).write(to: file)
        var watcher = try KeyFileWatcher.start(path: file.path).watcher
        #expect(watcher.poll() == nil)

        // A new file renamed over it (how an atomic deploy and a Kubernetes ConfigMap replace it).
        let staged = directory.appendingPathComponent("jwks.json.new")
        try Data(TestSigningKey.jwks([Self.first, Self.second]).utf8).write(to: staged)
        #expect(rename(staged.path, file.path) == 0)
        guard case .use(let both, changed: true)? = watcher.poll() else { Issue.record("rename not seen"); return }
        #expect(both.usableKids == ["first", "second"])
        #expect(watcher.poll() == nil)

        // An edit in place (same inode, another size).
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("{\"keys\": [".utf8))
        try handle.close()
        guard case .keep(let message)? = watcher.poll() else { Issue.record("garbage not seen"); return }
        #expect(message.contains("not JSON") && message.hasSuffix("the 2 keys in force stay"), "\(message)")
        #expect(watcher.poll() == nil)

        try FileManager.default.removeItem(at: file)
        guard case .keep(let missing)? = watcher.poll() else { Issue.record("removal not seen"); return }
        #expect(missing.contains("cannot be looked at (No such file or directory)"), "\(missing)")
        #expect(watcher.poll() == nil, "a missing file is reported once")

        try Data(TestSigningKey.jwks([Self.second]).utf8).write(to: file)
        guard case .use(let last, changed: true)? = watcher.poll() else { Issue.record("new file not seen"); return }
        #expect(last.usableKids == ["second"])
        #expect((watcher.tracker.refreshes, watcher.tracker.failures, watcher.tracker.usableKeys) == (3, 2, 1))
    }

    @Test("a file over 1 MiB is not read")
    func largeFile() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("jwks.json")
        try Data(repeating: UInt8(ascii: " "), count: KeyFileWatcher.maximumBytes + 1).write(to: file)
        guard case .failure(let problem) = KeyFileWatcher.read(file.path) else { Issue.record("read"); return }
        #expect(problem.reason == "is larger than 1048576 bytes")
    }

    @Test("/metrics: refreshes, failures and usable keys by source; refusals by reason in jwt mode only")
    func metrics() throws {
        var snapshot = MetricsSnapshot()
        let none = try ExpositionPage(String(decoding: MetricsExposition().render(snapshot), as: UTF8.self))
        #expect(none.types["rollcall_jwks_refreshes_total"] == nil)
        #expect(none.types["rollcall_logins_refused_total"] == nil)

        snapshot.checksTokens = true
        snapshot.loginRefusals = ["unknown_kid": 2, "expired": 1]
        snapshot.refreshRefusals = ["bad_signature": 4]
        snapshot.keySets = [KeySetMetrics(source: .file, refreshes: 3, failures: 1, usableKeys: 2),
                            KeySetMetrics(source: .url, refreshes: 7, failures: 2, usableKeys: 1)]
        let page = try ExpositionPage(String(decoding: MetricsExposition().render(snapshot), as: UTF8.self))
        #expect(page.types["rollcall_jwks_refreshes_total"] == "counter")
        #expect(page.types["rollcall_jwks_refresh_failures_total"] == "counter")
        #expect(page.types["rollcall_jwks_keys"] == "gauge")
        #expect(page.types["rollcall_logins_refused_total"] == "counter")
        #expect(page.types["rollcall_token_refreshes_refused_total"] == "counter")
        #expect(page.value(#"rollcall_jwks_refreshes_total{source="file"}"#) == 3)
        #expect(page.value(#"rollcall_jwks_refreshes_total{source="url"}"#) == 7)
        #expect(page.value(#"rollcall_jwks_refresh_failures_total{source="url"}"#) == 2)
        #expect(page.value(#"rollcall_jwks_keys{source="file"}"#) == 2)
        #expect(page.value(#"rollcall_logins_refused_total{reason="unknown_kid"}"#) == 2)
        #expect(page.value(#"rollcall_logins_refused_total{reason="expired"}"#) == 1)
        #expect(page.value(#"rollcall_token_refreshes_refused_total{reason="bad_signature"}"#) == 4)
        for reason in Authenticators.refusalReasons {
            #expect(page.value(#"rollcall_logins_refused_total{reason="\#(reason)"}"#) != nil, "\(reason) not at 0")
        }
    }
}
