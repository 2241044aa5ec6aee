import Foundation
import Logging
import RollcallCore

/// A swift-log handler for `log.format: "json"`: each message is one ``JSONLogLine`` written to
/// a ``LogOutput`` (stderr for the broker's logs) in one locked write, so lines from the
/// service thread and the main thread never interleave.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// The logger's label, written as `logger`.
    public let label: String
    let output: LogOutput

    /// A handler for `label` writing to `output`.
    public init(label: String, output: LogOutput = .standardError, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.output = output
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the event as one line: the handler's metadata, then the provider's, then the
    /// message's (later ones win); an attached error becomes `error` unless metadata has one.
    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        if let error = event.error, merged["error"] == nil { merged["error"] = "\(error)" }
        output.write(JSONLogLine.encode(level: event.level, message: event.message.description, label: label, metadata: merged))
    }
}

/// Where log lines go: a C stream, one locked `fwrite` + `fflush` per line.
public final class LogOutput: @unchecked Sendable {
    /// The process's standard error (the broker's logs).
    public static let standardError = LogOutput(stderr)
    /// The process's standard output (the `listening on` announcement).
    public static let standardOutput = LogOutput(stdout)

    private let stream: UnsafeMutablePointer<FILE>
    private let lock = NSLock()

    init(_ stream: UnsafeMutablePointer<FILE>) { self.stream = stream }

    /// Writes `line` and a newline, then flushes.
    public func write(_ line: String) {
        let bytes = Array(line.utf8) + [10]
        lock.withLock {
            _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, stream) }
            fflush(stream)
        }
    }
}

/// The broker's logging as `log` configures it (PROTOCOL §8): the swift-log bootstrap, the
/// `listening on` announcement and the errors the command reports itself, in the text or the
/// JSON format.
public struct BrokerLogFormat: Sendable {
    /// True for `log.format: "json"`.
    public let isJSON: Bool
    /// The least severe level logged.
    public let level: Logger.Level

    /// The format `log` asks for.
    public init(_ log: Configuration.Log) {
        isJSON = log.format == "json"
        level = Logger.Level(rawValue: log.level) ?? .info
    }

    /// Installs the process's swift-log handler (once per process).
    public func bootstrap() {
        let level = level
        if isJSON {
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        } else {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }

    /// Writes an announcement to stdout (`listening on HOST:PORT`): the text itself, or a JSON
    /// line whose `msg` it is.
    public func announce(_ text: String) {
        if isJSON {
            LogOutput.standardOutput.write(JSONLogLine.encode(level: .info, message: text, label: "rollcall"))
        } else {
            LogOutput.standardOutput.write(text)
        }
    }

    /// Writes an error the command reports before exiting (`rollcall: storage error: …`) to stderr.
    public func report(_ text: String) {
        if isJSON {
            LogOutput.standardError.write(JSONLogLine.encode(level: .error, message: text, label: "rollcall"))
        } else {
            LogOutput.standardError.write("rollcall: " + text)
        }
    }
}
