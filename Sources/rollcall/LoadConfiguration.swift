import Foundation
import RollcallCore
import RollcallProtocol

/// Why the configuration could not be loaded (stable `key` names the offending setting).
struct ConfigurationError: Error, CustomStringConvertible {
    /// The dotted key at fault, or the file for read/parse errors.
    let key: String
    /// Human-readable detail.
    let message: String
    var description: String { "\(key): \(message)" }
}

/// Loads the broker's configuration: defaults, then the file (if any), then `--host`/`--port`.
///
/// TODO(merge): replace the minimal file reading below with `ConfigurationLoader` (issue 2's
/// validating loader: every key, types, ranges, typo suggestions). This is the only place
/// the executable reads configuration.
func loadConfiguration(path: String?, host: String?, port: Int?) throws -> Configuration {
    var configuration = Configuration()
    if let path {
        configuration = try MinimalConfigurationReader.read(path: path, into: configuration)
    }
    if let host { configuration.listen.host = host }
    if let port {
        guard (0...65535).contains(port) else {
            throw ConfigurationError(key: "listen.port", message: "must be between 0 and 65535, got \(port)")
        }
        configuration.listen.port = port
    }
    return configuration
}

/// Stop-gap reader for the keys the transport needs until `ConfigurationLoader` is wired in.
/// Unknown keys are ignored here (the real loader rejects them).
private enum MinimalConfigurationReader {
    static func read(path: String, into base: Configuration) throws -> Configuration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: path, message: "cannot read the file")
        }
        let root: JSON
        do {
            root = try JSONParser.parse(Array(data))
        } catch {
            throw ConfigurationError(key: path, message: "not valid JSON: \(error)")
        }
        guard root.objectValue != nil else { throw ConfigurationError(key: path, message: "must hold one JSON object") }
        var c = base
        func number(_ section: String, _ key: String) throws -> Double? {
            guard let value = root[section]?[key], !value.isNull else { return nil }
            guard let number = value.numberValue?.doubleValue else {
                throw ConfigurationError(key: "\(section).\(key)", message: "must be a number")
            }
            return number
        }
        func string(_ section: String, _ key: String) throws -> String? {
            guard let value = root[section]?[key], !value.isNull else { return nil }
            guard let string = value.stringValue else {
                throw ConfigurationError(key: "\(section).\(key)", message: "must be a string")
            }
            return string
        }
        if let v = try string("listen", "host") { c.listen.host = v }
        if let v = try number("listen", "port") { c.listen.port = Int(v) }
        if let v = try string("http", "staticDir") { c.http.staticDir = v }
        if let list = root["http"]?["allowedOrigins"]?.arrayValue { c.http.allowedOrigins = list.compactMap(\.stringValue) }
        if let v = try number("heartbeat", "intervalSeconds") { c.heartbeat.intervalSeconds = v }
        if let v = try number("heartbeat", "timeoutSeconds") { c.heartbeat.timeoutSeconds = v }
        if let v = try number("presence", "timeoutSeconds") { c.presence.timeoutSeconds = v }
        if let v = try number("limits", "maxFrameBytes") { c.limits.maxFrameBytes = Int(v) }
        if let v = try number("limits", "maxOutboundBytes") { c.limits.maxOutboundBytes = Int(v) }
        if let v = try number("limits", "maxBatchBytes") { c.limits.maxBatchBytes = Int(v) }
        if let v = try number("limits", "maxSessionsPerUser") { c.limits.maxSessionsPerUser = Int(v) }
        if let v = try number("limits", "loginTimeoutSeconds") { c.limits.loginTimeoutSeconds = v }
        if let v = try number("limits", "requestsPerSecond") { c.limits.requestsPerSecond = v }
        if let v = try number("limits", "requestBurst") { c.limits.requestBurst = Int(v) }
        if let v = try string("log", "level") { c.log.level = v }
        if let storage = root["storage"]?["path"] { c.storage.path = storage.stringValue }
        return c
    }
}
