import Foundation
import RollcallProtocol
import Testing
@testable import RollcallCore

/// The repository root, found from this file's path.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

private func parse(_ text: String) throws(ConfigurationError) -> Configuration {
    try ConfigurationLoader.parse(Array(text.utf8))
}

/// Parses and validates, as the broker does without command-line overrides.
private func load(_ text: String, environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
    let configuration = try parse(text)
    try ConfigurationLoader.validate(configuration, environment: environment)
    return configuration
}

/// Every key path present in a JSON object, as dotted leaves.
private func leafPaths(_ json: JSON, prefix: String = "") -> [String] {
    guard let object = json.objectValue else { return [prefix] }
    return object.members.flatMap { member in
        leafPaths(member.value, prefix: prefix.isEmpty ? member.key : "\(prefix).\(member.key)")
    }
}

/// A document setting every key to a value other than its default, all values distinct.
private let everyKeyChanged = """
    {
      "listen":    {"host": "::1", "port": 9090},
      "tls":       {"certFile": "cert.pem", "keyFile": "key.pem"},
      "auth":      {"mode": "jwt", "secret": "s3cret", "secretEnv": "OTHER_SECRET", "secrets": ["older-s3cret"],
                    "jwksFile": "keys/jwks.json", "jwksUrl": "https://id.example/.well-known/jwks.json", "jwksCaFile": "id-ca.pem", "jwksRefreshSeconds": 60.5,
                    "allowInsecure": true,
                    "clockSkewSeconds": 4.5, "refreshNoticeSeconds": 12.5, "maxInfoBytes": 77},
      "http":      {"staticDir": "public", "adminDir": "console", "allowedOrigins": ["https://a.example", "https://b.example"], "permessageDeflate": true,
                   "permessageDeflateMemLevel": 2, "batchedSends": false, "coalesceWindowSeconds": 0.002,
                   "coalesceBusySeconds": 0.05},
      "heartbeat": {"intervalSeconds": 2.5, "timeoutSeconds": 7.5},
      "presence":  {"maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2,
                    "timeoutSeconds": 1.5, "snapshotMaxMembers": 11},
      "state":     {"maxKeys": 1024, "maxKeyBytes": 12, "maxValueBytes": 13,
                    "maxTotalBytes": 14, "maxPendingChannels": 15},
      "userStatus": {"customStatusMaxBytes": 16, "customStatusTtlSeconds": 17.5,
                    "clearCustomStatusOnOffline": true, "customStatusPerSecond": 0.5,
                    "maxSubscriptionsPerUser": 18, "maxSubscribersPerUser": 19,
                    "queryRate": {"calls": 21, "perSeconds": 2.25}},
      "limits":    {"maxFrameBytes": 22, "maxMessageBytes": 23,
                    "maxChannelsPerSession": 24, "maxSessionsPerUser": 25,
                    "maxOutboundBytes": 29, "maxBatchBytes": 26.0,
                    "loginTimeoutSeconds": 3.75,
                    "requestsPerSecond": 27.5, "requestBurst": 28, "heldMessageBytes": 29},
      "storage":   {"path": "other.db"},
      "log":       {"level": "trace", "format": "json"},
      "cluster":   {"redis": "rediss://127.0.0.1:6380/2", "keyPrefix": "rc2:", "nodeId": "node-a",
                    "heartbeatSeconds": 0.5, "nodeTimeoutSeconds": 2,
                    "tls": {"caFile": "redis-ca.pem", "certFile": "client.pem", "keyFile": "client.key", "serverName": "redis.internal"}},
      "api":       {"keys": ["key-one-0123456789", "key-two-0123456789"], "keyEnv": "OTHER_API_KEY"},
      "webhooks":  {"url": "https://hooks.example/in", "secret": "w3bh00k", "secretEnv": "OTHER_WEBHOOK_SECRET", "secrets": ["old-w3bh00k"],
                    "events": ["channel"], "batchMaxEvents": 31, "batchMaxDelaySeconds": 0.25,
                    "timeoutSeconds": 2.5, "retryMaxSeconds": 33, "queueMaxEvents": 34, "caFile": "ca.pem"}
    }
    """

/// `everyKeyChanged`, written by hand as a `Configuration`.
private var everyKeyChangedConfiguration: Configuration {
    var c = Configuration()
    c.listen.host = "::1"; c.listen.port = 9090
    c.tls.certFile = "cert.pem"; c.tls.keyFile = "key.pem"
    c.auth.mode = .jwt; c.auth.secret = "s3cret"; c.auth.secretEnv = "OTHER_SECRET"; c.auth.secrets = ["older-s3cret"]; c.auth.allowInsecure = true
    c.auth.jwksFile = "keys/jwks.json"; c.auth.jwksUrl = "https://id.example/.well-known/jwks.json"; c.auth.jwksRefreshSeconds = 60.5; c.auth.jwksCaFile = "id-ca.pem"
    c.auth.clockSkewSeconds = 4.5; c.auth.refreshNoticeSeconds = 12.5; c.auth.maxInfoBytes = 77
    c.http.staticDir = "public"; c.http.adminDir = "console"; c.http.allowedOrigins = ["https://a.example", "https://b.example"]; c.http.permessageDeflate = true; c.http.permessageDeflateMemLevel = 2; c.http.batchedSends = false
    c.http.coalesceWindowSeconds = 0.002; c.http.coalesceBusySeconds = 0.05
    c.heartbeat.intervalSeconds = 2.5; c.heartbeat.timeoutSeconds = 7.5
    c.presence.maxInstantEvents = 3; c.presence.hysteresis = 1; c.presence.intervalSeconds = 0.2
    c.presence.timeoutSeconds = 1.5; c.presence.snapshotMaxMembers = 11
    c.state.maxKeys = 1024; c.state.maxKeyBytes = 12; c.state.maxValueBytes = 13
    c.state.maxTotalBytes = 14; c.state.maxPendingChannels = 15
    c.userStatus.customStatusMaxBytes = 16; c.userStatus.customStatusTtlSeconds = 17.5
    c.userStatus.clearCustomStatusOnOffline = true; c.userStatus.customStatusPerSecond = 0.5
    c.userStatus.maxSubscriptionsPerUser = 18; c.userStatus.maxSubscribersPerUser = 19
    c.userStatus.queryRate = .init(calls: 21, perSeconds: 2.25)
    c.limits.maxFrameBytes = 22; c.limits.maxMessageBytes = 23
    c.limits.maxChannelsPerSession = 24; c.limits.maxSessionsPerUser = 25
    c.limits.maxOutboundBytes = 29; c.limits.maxBatchBytes = 26
    c.limits.loginTimeoutSeconds = 3.75; c.limits.requestsPerSecond = 27.5; c.limits.requestBurst = 28
    c.limits.heldMessageBytes = 29
    c.storage.path = "other.db"
    c.log.level = "trace"; c.log.format = "json"
    c.cluster.tls.caFile = "redis-ca.pem"; c.cluster.tls.certFile = "client.pem"; c.cluster.tls.keyFile = "client.key"
    c.cluster.tls.serverName = "redis.internal"
    c.cluster.redis = "rediss://127.0.0.1:6380/2"; c.cluster.keyPrefix = "rc2:"; c.cluster.nodeId = "node-a"
    c.cluster.heartbeatSeconds = 0.5; c.cluster.nodeTimeoutSeconds = 2
    c.webhooks.url = "https://hooks.example/in"; c.webhooks.secret = "w3bh00k"
    c.webhooks.secretEnv = "OTHER_WEBHOOK_SECRET"; c.webhooks.secrets = ["old-w3bh00k"]; c.webhooks.events = ["channel"]
    c.webhooks.batchMaxEvents = 31; c.webhooks.batchMaxDelaySeconds = 0.25; c.webhooks.timeoutSeconds = 2.5
    c.webhooks.retryMaxSeconds = 33; c.webhooks.queueMaxEvents = 34; c.webhooks.caFile = "ca.pem"
    c.api.keys = ["key-one-0123456789", "key-two-0123456789"]; c.api.keyEnv = "OTHER_API_KEY"
    return c
}

@Suite("Configuration loader: defaults and keys")
struct ConfigurationDefaultsTests {
    @Test("an empty object gives every default")
    func emptyObjectGivesDefaults() throws {
        #expect(try load("{}") == Configuration())
        #expect(try load(" \n{ }\t") == Configuration())
    }

    @Test("the repository's config.json is exactly the defaults, on 127.0.0.1:8080 with auth none")
    func repositoryConfigIsTheDefaults() throws {
        let path = repositoryRoot.appendingPathComponent("config.json").path
        let configuration = try ConfigurationLoader.load(file: path, environment: [:])
        #expect(configuration == Configuration())
        #expect(configuration.listen.host == "127.0.0.1")
        #expect(configuration.listen.port == 8080)
        #expect(configuration.auth.mode == .none)
    }

    @Test("the repository's config.json writes out every key")
    func repositoryConfigHasEveryKey() throws {
        let bytes = try ConfigurationLoader.readFile(repositoryRoot.appendingPathComponent("config.json").path)
        let paths = leafPaths(try JSONParser.parse(bytes))
        #expect(paths == ConfigurationLoader.keyPaths)
    }

    @Test("docs/configuration.md documents every key")
    func documentationHasEveryKey() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        for path in ConfigurationLoader.keyPaths {
            #expect(text.contains("`\(path)`"), "docs/configuration.md does not mention \(path)")
        }
    }

    @Test("every key round-trips into its own property")
    func everyKeyRoundTrips() throws {
        let environment: [String: String] = [:]
        let configuration = try load(everyKeyChanged, environment: environment)
        #expect(configuration == everyKeyChangedConfiguration)
        let document = try JSONParser.parse(Array(everyKeyChanged.utf8))
        #expect(leafPaths(document) == ConfigurationLoader.keyPaths)
    }

    @Test("each key set alone changes the configuration", arguments: ConfigurationLoader.keyPaths)
    func eachKeyAloneChangesTheConfiguration(path: String) throws {
        let document = try JSONParser.parse(Array(everyKeyChanged.utf8))
        let components = path.split(separator: ".").map(String.init)
        var value = document
        for component in components { value = try #require(value[component]) }
        var single = value
        for component in components.reversed() { single = .object([component: single]) }
        let configuration = try parse(single.compactString)
        #expect(configuration != Configuration())
    }

    @Test("nullable keys accept null")
    func nullableKeysAcceptNull() throws {
        let configuration = try load("""
            {"tls": {"certFile": null, "keyFile": null}, "auth": {"secret": null, "secretEnv": null},
             "http": {"staticDir": null, "adminDir": null}, "storage": {"path": null}}
            """)
        #expect(configuration.tls.certFile == nil)
        #expect(configuration.auth.secret == nil)
        #expect(configuration.auth.secretEnv == nil)
        #expect(configuration.http.staticDir == nil)
        #expect(configuration.http.adminDir == nil)
        #expect(configuration.storage.path == nil)
    }

    @Test("integer keys accept numbers with a zero fraction; durations accept fractions")
    func numberForms() throws {
        let configuration = try load("""
            {"listen": {"port": 8081.0}, "limits": {"maxFrameBytes": 1e5}, "presence": {"intervalSeconds": 0.1}}
            """)
        #expect(configuration.listen.port == 8081)
        #expect(configuration.limits.maxFrameBytes == 100_000)
        #expect(configuration.presence.intervalSeconds == 0.1)
    }

    @Test("a repeated key: the last occurrence wins")
    func repeatedKeyLastWins() throws {
        #expect(try load(#"{"listen": {"port": 1}, "listen": {"port": 2}}"#).listen.port == 2)
    }

    @Test("values at the edges of their ranges are accepted")
    func edgesAreAccepted() throws {
        let configuration = try load("""
            {"listen": {"port": 0}, "presence": {"maxInstantEvents": 1, "hysteresis": 0, "intervalSeconds": 0.1,
             "timeoutSeconds": 0.5}, "state": {"maxKeys": 1024}, "limits": {"maxBatchBytes": 4194304},
             "heartbeat": {"intervalSeconds": 0.5, "timeoutSeconds": 0.6}, "auth": {"clockSkewSeconds": 0}}
            """)
        #expect(configuration.listen.port == 0)
        #expect(configuration.auth.clockSkewSeconds == 0)
        #expect(try load(#"{"auth": {"clockSkewSeconds": 3600}}"#).auth.clockSkewSeconds == 3600)
        #expect(configuration.presence.maxInstantEvents == 1)
        #expect(configuration.state.maxKeys == 1024)
        #expect(try load(#"{"listen": {"port": 65535}, "state": {"maxKeys": 1}}"#).listen.port == 65535)
        #expect(try load(#"{"http": {"coalesceWindowSeconds": 0}}"#).http.coalesceWindowSeconds == 0, "0 turns coalescing off")
        let widest = try load(#"{"http": {"coalesceWindowSeconds": 0.1, "coalesceBusySeconds": 0.1}}"#)
        #expect(widest.http.coalesceWindowSeconds == 0.1 && widest.http.coalesceBusySeconds == 0.1)
        #expect(try load(#"{"http": {"coalesceBusySeconds": 1}}"#).http.coalesceBusySeconds == 1)
    }
}

@Suite("Configuration loader: command-line overrides")
struct ConfigurationOverrideTests {
    @Test("--host and --port replace listen before validation")
    func overridesApply() throws {
        var configuration = try parse("{}")
        ConfigurationLoader.apply(host: "localhost", port: 0, to: &configuration)
        try ConfigurationLoader.validate(configuration, environment: [:])
        #expect(configuration.listen.host == "localhost")
        #expect(configuration.listen.port == 0)
    }

    @Test("nil overrides keep the file's values")
    func nilOverridesKeepValues() throws {
        var configuration = try parse(#"{"listen": {"host": "127.0.0.2", "port": 9000}}"#)
        ConfigurationLoader.apply(host: nil, port: nil, to: &configuration)
        #expect(configuration.listen.host == "127.0.0.2")
        #expect(configuration.listen.port == 9000)
    }

    @Test("an out-of-range --port is refused naming listen.port")
    func badPortOverride() throws {
        var configuration = try parse("{}")
        ConfigurationLoader.apply(host: nil, port: 70_000, to: &configuration)
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.validate(configuration, environment: [:])
        }
        #expect(error?.keyPath == "listen.port")
        #expect(error?.code == .outOfRange)
    }

    @Test("--host on a public address with auth none needs auth.allowInsecure")
    func publicHostOverride() throws {
        var configuration = try parse("{}")
        ConfigurationLoader.apply(host: "0.0.0.0", port: nil, to: &configuration)
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.validate(configuration, environment: [:])
        }
        #expect(error?.keyPath == "auth.mode")
        #expect(error?.description.contains("auth.allowInsecure") == true)
        configuration.auth.allowInsecure = true
        try ConfigurationLoader.validate(configuration, environment: [:])
    }
}

/// One configuration that must be refused.
struct InvalidConfiguration: Sendable, CustomTestStringConvertible {
    let json: String
    let code: ConfigurationError.Code
    let keyPath: String
    /// Text the message must contain.
    let mentions: String
    var environment: [String: String] = [:]

    var testDescription: String { "\(keyPath.isEmpty ? "(document)" : keyPath): \(json)" }
}

@Suite("Configuration loader: refusals name their key")
struct ConfigurationRefusalTests {
    static let cases: [InvalidConfiguration] = [
        // Not a JSON object.
        .init(json: #"{"listen": }"#, code: .malformedJSON, keyPath: "", mentions: "not valid JSON"),
        .init(json: #"{"listen": {"port": 1},}"#, code: .malformedJSON, keyPath: "", mentions: "not valid JSON"),
        .init(json: "", code: .malformedJSON, keyPath: "", mentions: "not valid JSON"),
        .init(json: "[]", code: .notAnObject, keyPath: "", mentions: "JSON object"),
        .init(json: #""config""#, code: .notAnObject, keyPath: "", mentions: "JSON object"),
        .init(json: "null", code: .notAnObject, keyPath: "", mentions: "JSON object"),
        // Unknown keys, with the nearest known key at that level.
        .init(json: #"{"presence": {"maxInstantEvent": 5}}"#, code: .unknownKey,
              keyPath: "presence.maxInstantEvent", mentions: "did you mean presence.maxInstantEvents?"),
        .init(json: #"{"presense": {}}"#, code: .unknownKey, keyPath: "presense", mentions: "did you mean presence?"),
        .init(json: #"{"userStatus": {"queryRate": {"call": 1}}}"#, code: .unknownKey,
              keyPath: "userStatus.queryRate.call", mentions: "did you mean userStatus.queryRate.calls?"),
        .init(json: #"{"limits": {"maxframebytes": 1}}"#, code: .unknownKey,
              keyPath: "limits.maxframebytes", mentions: "did you mean limits.maxFrameBytes?"),
        .init(json: #"{"listen": {"port": {"value": 1}}}"#, code: .wrongType, keyPath: "listen.port", mentions: "expected an integer"),
        // Wrong types.
        .init(json: #"{"listen": {"port": "8080"}}"#, code: .wrongType, keyPath: "listen.port", mentions: "expected an integer, got a string"),
        .init(json: #"{"listen": {"port": 80.5}}"#, code: .wrongType, keyPath: "listen.port", mentions: "expected an integer"),
        .init(json: #"{"listen": {"port": 1e400}}"#, code: .wrongType, keyPath: "listen.port", mentions: "expected an integer"),
        .init(json: #"{"listen": {"host": null}}"#, code: .wrongType, keyPath: "listen.host", mentions: "expected a string, got null"),
        .init(json: #"{"presence": 5}"#, code: .wrongType, keyPath: "presence", mentions: "expected an object"),
        .init(json: #"{"userStatus": {"queryRate": [20, 5]}}"#, code: .wrongType, keyPath: "userStatus.queryRate", mentions: "expected an object"),
        .init(json: #"{"heartbeat": {"intervalSeconds": "10"}}"#, code: .wrongType,
              keyPath: "heartbeat.intervalSeconds", mentions: "expected a number"),
        .init(json: #"{"auth": {"allowInsecure": "yes"}}"#, code: .wrongType, keyPath: "auth.allowInsecure", mentions: "expected a boolean"),
        .init(json: #"{"auth": {"clockSkewSeconds": "30"}}"#, code: .wrongType, keyPath: "auth.clockSkewSeconds", mentions: "expected a number"),
        .init(json: #"{"auth": {"clockSkewSeconds": -1}}"#, code: .outOfRange, keyPath: "auth.clockSkewSeconds", mentions: "from 0 to 3600"),
        .init(json: #"{"auth": {"clockSkewSeconds": 3600.5}}"#, code: .outOfRange, keyPath: "auth.clockSkewSeconds", mentions: "from 0 to 3600"),
        .init(json: #"{"auth": {"refreshNoticeSeconds": -1}}"#, code: .outOfRange, keyPath: "auth.refreshNoticeSeconds", mentions: "from 0 to 86400"),
        .init(json: #"{"auth": {"refreshNoticeSeconds": "60"}}"#, code: .wrongType, keyPath: "auth.refreshNoticeSeconds", mentions: "expected a number"),
        .init(json: #"{"auth": {"maxInfoBytes": 1}}"#, code: .outOfRange, keyPath: "auth.maxInfoBytes", mentions: "from 2 to 1048576"),
        .init(json: #"{"auth": {"maxInfoBytes": 10.5}}"#, code: .wrongType, keyPath: "auth.maxInfoBytes", mentions: "integer"),
        .init(json: #"{"auth": {"mode": 1}}"#, code: .wrongType, keyPath: "auth.mode", mentions: "expected a string"),
        .init(json: #"{"http": {"allowedOrigins": "*"}}"#, code: .wrongType, keyPath: "http.allowedOrigins", mentions: "expected an array of strings"),
        .init(json: #"{"http": {"allowedOrigins": ["*", 1]}}"#, code: .wrongType, keyPath: "http.allowedOrigins", mentions: "expected an array of strings"),
        .init(json: #"{"storage": {"path": false}}"#, code: .wrongType, keyPath: "storage.path", mentions: "expected a string or null"),
        .init(json: #"{"tls": {"certFile": 1}}"#, code: .wrongType, keyPath: "tls.certFile", mentions: "expected a string or null"),
        // Out of range.
        .init(json: #"{"auth": {"mode": "basic"}}"#, code: .outOfRange, keyPath: "auth.mode", mentions: "one of none, jwt"),
        .init(json: #"{"log": {"level": "verbose"}}"#, code: .outOfRange, keyPath: "log.level", mentions: "one of trace, debug, info"),
        .init(json: #"{"log": {"format": "logfmt"}}"#, code: .outOfRange, keyPath: "log.format", mentions: "one of text, json"),
        .init(json: #"{"log": {"format": 1}}"#, code: .wrongType, keyPath: "log.format", mentions: "expected a string"),
        .init(json: #"{"auth": {"secrets": ["ok", ""]}}"#, code: .outOfRange, keyPath: "auth.secrets", mentions: "non-empty"),
        .init(json: #"{"auth": {"secrets": "s"}}"#, code: .wrongType, keyPath: "auth.secrets", mentions: "expected an array of strings"),
        .init(json: #"{"auth": {"jwksFile": ""}}"#, code: .outOfRange, keyPath: "auth.jwksFile", mentions: "non-empty"),
        .init(json: #"{"auth": {"jwksFile": ["a.json"]}}"#, code: .wrongType, keyPath: "auth.jwksFile", mentions: "expected a string or null"),
        .init(json: #"{"auth": {"jwksUrl": ""}}"#, code: .outOfRange, keyPath: "auth.jwksUrl", mentions: "non-empty"),
        .init(json: #"{"auth": {"jwksUrl": 443}}"#, code: .wrongType, keyPath: "auth.jwksUrl", mentions: "expected a string or null"),
        .init(json: #"{"auth": {"jwksRefreshSeconds": 0.5}}"#, code: .outOfRange, keyPath: "auth.jwksRefreshSeconds", mentions: "from 1 to 86400 (got 0.5)"),
        .init(json: #"{"auth": {"jwksRefreshSeconds": 86401}}"#, code: .outOfRange, keyPath: "auth.jwksRefreshSeconds", mentions: "from 1 to 86400"),
        .init(json: #"{"auth": {"jwksRefreshSeconds": "300"}}"#, code: .wrongType, keyPath: "auth.jwksRefreshSeconds", mentions: "expected a number"),
        .init(json: #"{"auth": {"jwksUrl": "ftp://id.example/jwks"}}"#, code: .conflict, keyPath: "auth.jwksUrl", mentions: "http:// or https://"),
        .init(json: #"{"auth": {"jwksUrl": "https://u:p@id.example/jwks"}}"#, code: .conflict, keyPath: "auth.jwksUrl", mentions: "user info"),
        .init(json: #"{"auth": {"jwksUrl": "https://id.example:0/jwks"}}"#, code: .conflict, keyPath: "auth.jwksUrl", mentions: "port"),
        .init(json: #"{"webhooks": {"secrets": "s"}}"#, code: .wrongType, keyPath: "webhooks.secrets", mentions: "expected an array of strings"),
        .init(json: #"{"webhooks": {"secrets": [""]}}"#, code: .outOfRange, keyPath: "webhooks.secrets", mentions: "non-empty"),
        .init(json: #"{"listen": {"port": 65536}}"#, code: .outOfRange, keyPath: "listen.port", mentions: "from 0 to 65535 (got 65536)"),
        .init(json: #"{"listen": {"port": -1}}"#, code: .outOfRange, keyPath: "listen.port", mentions: "from 0 to 65535"),
        .init(json: #"{"listen": {"host": ""}}"#, code: .outOfRange, keyPath: "listen.host", mentions: "non-empty"),
        .init(json: #"{"storage": {"path": ""}}"#, code: .outOfRange, keyPath: "storage.path", mentions: "non-empty"),
        .init(json: #"{"http": {"adminDir": ""}}"#, code: .outOfRange, keyPath: "http.adminDir", mentions: "non-empty"),
        .init(json: #"{"http": {"adminDir": ["examples/admin"]}}"#, code: .wrongType, keyPath: "http.adminDir", mentions: "expected a string or null"),
        .init(json: #"{"http": {"allowedOrigins": [""]}}"#, code: .outOfRange, keyPath: "http.allowedOrigins", mentions: "non-empty"),
        .init(json: #"{"http": {"permessageDeflate": "yes"}}"#, code: .wrongType, keyPath: "http.permessageDeflate", mentions: "expected a boolean"),
        .init(json: #"{"http": {"permessageDeflateMemLevel": 0}}"#, code: .outOfRange, keyPath: "http.permessageDeflateMemLevel", mentions: "from 1 to 9 (got 0)"),
        .init(json: #"{"http": {"permessageDeflateMemLevel": 10}}"#, code: .outOfRange, keyPath: "http.permessageDeflateMemLevel", mentions: "from 1 to 9"),
        .init(json: #"{"presence": {"maxInstantEvents": 0, "hysteresis": 0}}"#, code: .outOfRange,
              keyPath: "presence.maxInstantEvents", mentions: "from 1 to"),
        .init(json: #"{"presence": {"hysteresis": -1}}"#, code: .outOfRange, keyPath: "presence.hysteresis", mentions: "from 0 to"),
        .init(json: #"{"presence": {"intervalSeconds": 0.05}}"#, code: .outOfRange,
              keyPath: "presence.intervalSeconds", mentions: "from 0.1 to 31536000 (got 0.05)"),
        .init(json: #"{"presence": {"timeoutSeconds": 0}}"#, code: .outOfRange,
              keyPath: "presence.timeoutSeconds", mentions: "greater than 0"),
        .init(json: #"{"presence": {"snapshotMaxMembers": 0}}"#, code: .outOfRange, keyPath: "presence.snapshotMaxMembers", mentions: "from 1"),
        .init(json: #"{"heartbeat": {"intervalSeconds": -1}}"#, code: .outOfRange, keyPath: "heartbeat.intervalSeconds", mentions: "greater than 0"),
        .init(json: #"{"heartbeat": {"timeoutSeconds": 70000}}"#, code: .outOfRange, keyPath: "heartbeat.timeoutSeconds", mentions: "at most 65535"),
        .init(json: #"{"state": {"maxKeys": 1025}}"#, code: .outOfRange, keyPath: "state.maxKeys", mentions: "from 1 to 1024"),
        .init(json: #"{"state": {"maxKeys": 0}}"#, code: .outOfRange, keyPath: "state.maxKeys", mentions: "from 1 to 1024"),
        .init(json: #"{"state": {"maxTotalBytes": 0}}"#, code: .outOfRange, keyPath: "state.maxTotalBytes", mentions: "from 1"),
        .init(json: #"{"userStatus": {"queryRate": {"calls": 0}}}"#, code: .outOfRange, keyPath: "userStatus.queryRate.calls", mentions: "from 1"),
        .init(json: #"{"userStatus": {"queryRate": {"perSeconds": 0}}}"#, code: .outOfRange,
              keyPath: "userStatus.queryRate.perSeconds", mentions: "greater than 0"),
        .init(json: #"{"userStatus": {"customStatusPerSecond": 0}}"#, code: .outOfRange,
              keyPath: "userStatus.customStatusPerSecond", mentions: "greater than 0"),
        .init(json: #"{"userStatus": {"customStatusTtlSeconds": 1e400}}"#, code: .outOfRange,
              keyPath: "userStatus.customStatusTtlSeconds", mentions: "at most 31536000"),
        .init(json: #"{"limits": {"maxFrameBytes": 0}}"#, code: .outOfRange, keyPath: "limits.maxFrameBytes", mentions: "from 1"),
        .init(json: #"{"limits": {"maxSessionsPerUser": 2147483648}}"#, code: .outOfRange,
              keyPath: "limits.maxSessionsPerUser", mentions: "to 2147483647"),
        .init(json: #"{"limits": {"requestsPerSecond": 0}}"#, code: .outOfRange, keyPath: "limits.requestsPerSecond", mentions: "greater than 0"),
        .init(json: #"{"limits": {"requestBurst": 0}}"#, code: .outOfRange, keyPath: "limits.requestBurst", mentions: "from 1"),
        .init(json: #"{"limits": {"heldMessageBytes": -1}}"#, code: .outOfRange, keyPath: "limits.heldMessageBytes", mentions: "from 0"),
        .init(json: #"{"limits": {"loginTimeoutSeconds": 0}}"#, code: .outOfRange, keyPath: "limits.loginTimeoutSeconds", mentions: "greater than 0"),
        // Rules between keys.
        .init(json: #"{"heartbeat": {"intervalSeconds": 30, "timeoutSeconds": 30}}"#, code: .conflict,
              keyPath: "heartbeat.timeoutSeconds", mentions: "greater than heartbeat.intervalSeconds (30)"),
        .init(json: #"{"presence": {"maxInstantEvents": 10}}"#, code: .conflict,
              keyPath: "presence.hysteresis", mentions: "less than presence.maxInstantEvents (10)"),
        .init(json: #"{"http": {"coalesceWindowSeconds": 0.2}}"#, code: .outOfRange, keyPath: "http.coalesceWindowSeconds", mentions: "0.1"),
        .init(json: #"{"http": {"coalesceWindowSeconds": -0.001}}"#, code: .outOfRange, keyPath: "http.coalesceWindowSeconds", mentions: "from 0"),
        .init(json: #"{"http": {"coalesceBusySeconds": 0}}"#, code: .outOfRange, keyPath: "http.coalesceBusySeconds", mentions: "greater than 0"),
        .init(json: #"{"http": {"coalesceBusySeconds": 1.5}}"#, code: .outOfRange, keyPath: "http.coalesceBusySeconds", mentions: "1"),
        .init(json: #"{"http": {"coalesceWindowSeconds": 0.02, "coalesceBusySeconds": 0.01}}"#, code: .conflict,
              keyPath: "http.coalesceBusySeconds", mentions: "at least http.coalesceWindowSeconds (0.02)"),
        .init(json: #"{"limits": {"maxBatchBytes": 5000000}}"#, code: .conflict,
              keyPath: "limits.maxBatchBytes", mentions: "at most limits.maxOutboundBytes (4194304)"),
        .init(json: #"{"tls": {"certFile": "cert.pem"}}"#, code: .conflict, keyPath: "tls.keyFile", mentions: "required when tls.certFile"),
        .init(json: #"{"tls": {"keyFile": "key.pem"}}"#, code: .conflict, keyPath: "tls.certFile", mentions: "required when tls.keyFile"),
        .init(json: #"{"auth": {"mode": "jwt"}}"#, code: .conflict, keyPath: "auth.secret", mentions: "ROLLCALL_JWT_SECRET"),
        .init(json: #"{"auth": {"mode": "jwt"}}"#, code: .conflict, keyPath: "auth.secret", mentions: "ROLLCALL_JWT_SECRET",
              environment: ["ROLLCALL_JWT_SECRET": ""]),
        .init(json: #"{"auth": {"mode": "jwt", "secretEnv": "MY_SECRET"}}"#, code: .conflict, keyPath: "auth.secret", mentions: "MY_SECRET",
              environment: ["ROLLCALL_JWT_SECRET": "x"]),
        .init(json: #"{"auth": {"mode": "jwt", "secretEnv": null}}"#, code: .conflict, keyPath: "auth.secret", mentions: "needs auth.secret"),
        .init(json: #"{"auth": {"mode": "jwt", "secretEnv": null}}"#, code: .conflict, keyPath: "auth.secret", mentions: "auth.jwksFile, auth.jwksUrl"),
        .init(json: #"{"auth": {"mode": "jwt", "secret": ""}}"#, code: .outOfRange, keyPath: "auth.secret", mentions: "non-empty"),
        .init(json: #"{"listen": {"host": "0.0.0.0"}}"#, code: .conflict, keyPath: "auth.mode", mentions: "needs auth.allowInsecure: true"),
        .init(json: #"{"listen": {"host": "::"}}"#, code: .conflict, keyPath: "auth.mode", mentions: "non-loopback listen.host ::"),
        .init(json: #"{"listen": {"host": "rollcall.example"}}"#, code: .conflict, keyPath: "auth.mode", mentions: "auth.allowInsecure"),
        // cluster.tls only with a rediss URL (settings that would be ignored).
        .init(json: #"{"cluster": {"redis": "redis+cluster://127.0.0.1:7000", "tls": {"serverName": "redis.internal"}}}"#,
              code: .conflict, keyPath: "cluster.tls", mentions: "not a rediss://, rediss+sentinel:// or rediss+cluster:// URL"),
    ]

    @Test("each invalid configuration is refused naming its key", arguments: cases)
    func refused(_ invalid: InvalidConfiguration) {
        let error = #expect(throws: ConfigurationError.self) {
            try load(invalid.json, environment: invalid.environment)
        }
        guard let error else { return }
        #expect(error.code == invalid.code)
        #expect(error.keyPath == invalid.keyPath)
        #expect(error.description.contains(invalid.mentions), "\(error)")
        if !invalid.keyPath.isEmpty { #expect(error.description.hasPrefix("\(invalid.keyPath): ")) }
    }

    @Test("the unknown-key message reads as documented")
    func unknownKeyMessage() {
        let error = #expect(throws: ConfigurationError.self) { try parse(#"{"presence": {"maxInstantEvent": 5}}"#) }
        #expect(error?.description == "presence.maxInstantEvent: unknown key (did you mean presence.maxInstantEvents?)")
        #expect(error?.suggestion == "presence.maxInstantEvents")
    }

    @Test("jwt is accepted with a secret, or with a non-empty variable named by auth.secretEnv")
    func jwtWithASecret() throws {
        #expect(try load(#"{"auth": {"mode": "jwt", "secret": "k"}}"#).auth.secret == "k")
        _ = try load(#"{"auth": {"mode": "jwt"}}"#, environment: ["ROLLCALL_JWT_SECRET": "k"])
        _ = try load(#"{"auth": {"mode": "jwt", "secretEnv": "MINE"}}"#, environment: ["MINE": "k"])
        _ = try load(#"{"listen": {"host": "0.0.0.0"}, "auth": {"mode": "jwt", "secret": "k"}}"#)
    }

    @Test("cluster.tls is accepted with rediss://, rediss+sentinel:// and rediss+cluster://")
    func clusterTLSWithEveryTLSScheme() throws {
        for url in ["rediss://127.0.0.1:6380", "rediss+sentinel://127.0.0.1:26379/m", "rediss+cluster://127.0.0.1:7000,127.0.0.1:7001"] {
            let configuration = try load(#"{"cluster": {"redis": "\#(url)", "tls": {"serverName": "redis.internal"}}}"#)
            #expect(configuration.cluster.redis == url && configuration.cluster.tls.serverName == "redis.internal")
        }
    }

    @Test("auth none on a public address is accepted with auth.allowInsecure")
    func insecureOptIn() throws {
        let configuration = try load(#"{"listen": {"host": "0.0.0.0"}, "auth": {"allowInsecure": true}}"#)
        #expect(configuration.auth.allowInsecure)
    }
}

@Suite("Configuration loader: files")
struct ConfigurationFileTests {
    private func temporaryFile(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("rollcall-config-\(UInt64.random(in: 0...UInt64.max)).json").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a missing file is refused naming the file and the reason")
    func missingFile() {
        let path = "/nonexistent/rollcall/config.json"
        let error = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: path, environment: [:]) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.file == path)
        #expect(error?.description.hasPrefix("\(path): cannot read") == true)
        #expect(error?.description.contains("No such file") == true)
    }

    @Test("a directory is refused as unreadable")
    func directory() {
        let path = FileManager.default.temporaryDirectory.path
        let error = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: path, environment: [:]) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.file == path)
    }

    @Test("errors inside a file name the file and the key")
    func errorInFile() throws {
        let path = try temporaryFile(#"{"limits": {"maxBatchBytes": "big"}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: path, environment: [:]) }
        #expect(error?.description == "\(path): limits.maxBatchBytes: expected an integer, got a string")
    }

    @Test("a file is parsed, overridden, then validated")
    func fileWithOverrides() throws {
        let path = try temporaryFile(#"{"listen": {"host": "0.0.0.0", "port": 70000}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = try ConfigurationLoader.load(file: path, host: "127.0.0.1", port: 9000, environment: [:])
        #expect(configuration.listen.host == "127.0.0.1")
        #expect(configuration.listen.port == 9000)
    }

    @Test("without a file: every default, still overridden and validated")
    func noFile() throws {
        #expect(try ConfigurationLoader.load(file: nil, environment: [:]) == Configuration())
        #expect(try ConfigurationLoader.load(file: nil, port: 0, environment: [:]).listen.port == 0)
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(file: nil, host: "0.0.0.0", environment: [:])
        }
        #expect(error?.description.hasPrefix("auth.mode: ") == true)
        #expect(error?.file == nil)
    }

    @Test("an oversized file is refused")
    func oversizedFile() throws {
        let path = try temporaryFile("{}" + String(repeating: " ", count: ConfigurationLoader.maxFileBytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: path, environment: [:]) }
        #expect(error?.code == .unreadableFile)
    }
}

@Suite("Configuration loader: helpers")
struct ConfigurationHelperTests {
    @Test("loopback hosts", arguments: [
        "127.0.0.1", "127.1.2.3", "localhost", "LocalHost", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
    ])
    func loopback(host: String) {
        #expect(LoopbackHost.contains(host))
    }

    @Test("hosts reachable from the network", arguments: [
        "0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "126.255.255.255", "example.com", "127.0.0", "127.0.0.256",
        "::2", "::ffff:10.0.0.1", "1::1", "", "localhost.example", "127.0.0.1.example", "::1%lo",
    ])
    func notLoopback(host: String) {
        #expect(!LoopbackHost.contains(host))
    }

    @Test("edit distance")
    func distance() {
        #expect(editDistance("", "abc") == 3)
        #expect(editDistance("abc", "") == 3)
        #expect(editDistance("maxInstantEvent", "maxInstantEvents") == 1)
        #expect(editDistance("kitten", "sitting") == 3)
        #expect(editDistance("same", "same") == 0)
    }
}
