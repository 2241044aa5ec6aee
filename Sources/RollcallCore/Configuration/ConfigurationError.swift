/// Why a configuration was refused: the key it concerns, a stable code and a message.
///
/// `description` reads `[file: ]key.path: message`, e.g.
/// `presence.maxInstantEvent: unknown key (did you mean presence.maxInstantEvents?)`.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is; the raw values are stable.
    public enum Code: String, Sendable, Equatable {
        /// The configuration file could not be read.
        case unreadableFile
        /// The bytes are not valid JSON.
        case malformedJSON
        /// The document (or a section) is valid JSON but not an object.
        case notAnObject
        /// A key that the configuration does not have.
        case unknownKey
        /// A known key holding a value of the wrong JSON type.
        case wrongType
        /// A value of the right type outside the key's allowed values.
        case outOfRange
        /// Values that are fine one by one but not together (e.g. `heartbeat.timeoutSeconds`
        /// not above `heartbeat.intervalSeconds`).
        case conflict
    }

    /// What kind of problem it is.
    public var code: Code
    /// Dotted path of the key concerned, e.g. `presence.maxInstantEvents`; empty when the
    /// problem is the whole document or file.
    var keyPath: String
    /// What is wrong, without the key path.
    public var message: String
    /// For ``Code/unknownKey``: the nearest known key at the same level, as a full path.
    var suggestion: String?
    /// The file the configuration came from, when it came from one.
    public var file: String?

    /// An error about `keyPath`.
    public init(_ code: Code, keyPath: String, message: String, suggestion: String? = nil, file: String? = nil) {
        self.code = code
        self.keyPath = keyPath
        self.message = message
        self.suggestion = suggestion
        self.file = file
    }

    public var description: String {
        var text = ""
        if let file { text += "\(file): " }
        if !keyPath.isEmpty { text += "\(keyPath): " }
        return text + message
    }

    /// The same error attributed to `file`.
    func inFile(_ file: String) -> ConfigurationError {
        var copy = self
        copy.file = file
        return copy
    }
}
