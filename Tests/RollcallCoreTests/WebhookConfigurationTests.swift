import RollcallProtocol
import Testing
@testable import RollcallCore

/// The `webhooks` section (PROTOCOL §11): refusals name their key; urls parse.
@Suite("Configuration: webhooks")
struct WebhookConfigurationTests {
    private func load(_ text: String, environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
        let configuration = try ConfigurationLoader.parse(Array(text.utf8))
        try ConfigurationLoader.validate(configuration, environment: environment)
        return configuration
    }

    static let refusals: [InvalidConfiguration] = [
        .init(json: #"{"webhooks": {"url": "http://127.0.0.1/h"}}"#, code: .conflict, keyPath: "webhooks.secret",
              mentions: "ROLLCALL_WEBHOOK_SECRET"),
        .init(json: #"{"webhooks": {"url": "http://127.0.0.1/h"}}"#, code: .conflict, keyPath: "webhooks.secret",
              mentions: "ROLLCALL_WEBHOOK_SECRET", environment: ["ROLLCALL_WEBHOOK_SECRET": ""]),
        .init(json: #"{"webhooks": {"url": "http://127.0.0.1/h", "secretEnv": null}}"#, code: .conflict,
              keyPath: "webhooks.secret", mentions: "needs webhooks.secret"),
        .init(json: #"{"webhooks": {"url": "ftp://127.0.0.1/h", "secret": "s"}}"#, code: .conflict,
              keyPath: "webhooks.url", mentions: "http:// or https://"),
        .init(json: #"{"webhooks": {"url": "127.0.0.1:8000/h", "secret": "s"}}"#, code: .conflict,
              keyPath: "webhooks.url", mentions: "http:// or https://"),
        .init(json: #"{"webhooks": {"url": "http:///h", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "host"),
        .init(json: #"{"webhooks": {"url": "http://:80/h", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "host"),
        .init(json: #"{"webhooks": {"url": "http://h:0/", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "port"),
        .init(json: #"{"webhooks": {"url": "http://h:99999/", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "port"),
        .init(json: #"{"webhooks": {"url": "http://u:p@h/", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "user info"),
        .init(json: #"{"webhooks": {"url": "http://h/a b", "secret": "s"}}"#, code: .conflict, keyPath: "webhooks.url", mentions: "spaces"),
        .init(json: #"{"webhooks": {"url": ""}}"#, code: .outOfRange, keyPath: "webhooks.url", mentions: "non-empty"),
        .init(json: #"{"webhooks": {"events": ["presence", "typing"]}}"#, code: .conflict, keyPath: "webhooks.events",
              mentions: "unknown event \"typing\""),
        .init(json: #"{"webhooks": {"events": "presence"}}"#, code: .wrongType, keyPath: "webhooks.events", mentions: "array of strings"),
        .init(json: #"{"webhooks": {"batchMaxEvents": 0}}"#, code: .outOfRange, keyPath: "webhooks.batchMaxEvents", mentions: "from 1 to 10000"),
        .init(json: #"{"webhooks": {"batchMaxEvents": 10001, "queueMaxEvents": 20000}}"#, code: .outOfRange,
              keyPath: "webhooks.batchMaxEvents", mentions: "from 1 to 10000"),
        .init(json: #"{"webhooks": {"batchMaxDelaySeconds": -0.1}}"#, code: .outOfRange,
              keyPath: "webhooks.batchMaxDelaySeconds", mentions: "from 0 to 3600"),
        .init(json: #"{"webhooks": {"timeoutSeconds": 0}}"#, code: .outOfRange, keyPath: "webhooks.timeoutSeconds", mentions: "from 0.1"),
        .init(json: #"{"webhooks": {"retryMaxSeconds": -1}}"#, code: .outOfRange, keyPath: "webhooks.retryMaxSeconds", mentions: "from 0 to 604800"),
        .init(json: #"{"webhooks": {"queueMaxEvents": 0}}"#, code: .outOfRange, keyPath: "webhooks.queueMaxEvents", mentions: "from 1"),
        .init(json: #"{"webhooks": {"queueMaxEvents": 50}}"#, code: .conflict, keyPath: "webhooks.queueMaxEvents",
              mentions: "at least webhooks.batchMaxEvents (100)"),
        .init(json: #"{"webhooks": {"urll": null}}"#, code: .unknownKey, keyPath: "webhooks.urll", mentions: "did you mean webhooks.url?"),
    ]

    @Test("each invalid webhooks section is refused naming its key", arguments: refusals)
    func refused(_ invalid: InvalidConfiguration) {
        let error = #expect(throws: ConfigurationError.self) {
            try load(invalid.json, environment: invalid.environment)
        }
        guard let error else { return }
        #expect(error.code == invalid.code)
        #expect(error.keyPath == invalid.keyPath)
        #expect(error.description.contains(invalid.mentions), "\(error)")
    }

    @Test("a url with a secret, or with the variable named by secretEnv, is accepted")
    func accepted() throws {
        let inline = try load(#"{"webhooks": {"url": "https://hooks.example:8443/in?x=1", "secret": "s"}}"#)
        #expect(inline.webhooks.resolvedSecret(environment: [:]) == "s")
        let fromEnvironment = try load(#"{"webhooks": {"url": "http://127.0.0.1:9000"}}"#,
                                       environment: ["ROLLCALL_WEBHOOK_SECRET": "e"])
        #expect(fromEnvironment.webhooks.resolvedSecret(environment: ["ROLLCALL_WEBHOOK_SECRET": "e"]) == "e")
        #expect(fromEnvironment.webhooks.eventKinds == [.presence, .channel, .userStatus])
        let off = try load(#"{"webhooks": {"events": []}}"#)
        #expect(!off.webhooks.isEnabled)
        #expect(off.webhooks.eventKinds.isEmpty)
    }

    @Test("urls split into scheme, host, port and target")
    func urls() throws {
        let plain = try WebhookURL("http://127.0.0.1:8000/hooks/in?x=1")
        #expect(plain == WebhookURL(secure: false, host: "127.0.0.1", port: 8000, path: "/hooks/in?x=1"))
        #expect(plain.hostHeader == "127.0.0.1:8000")
        let secure = try WebhookURL("HTTPS://Backend.example")
        #expect(secure.secure && secure.port == 443 && secure.path == "/" && secure.hostHeader == "Backend.example")
        let six = try WebhookURL("http://[::1]:81?q")
        #expect(six.host == "::1" && six.port == 81 && six.path == "/?q" && six.hostHeader == "[::1]:81")
        #expect(throws: WebhookURLError.self) { try WebhookURL("http://h/#frag") }
    }
}
