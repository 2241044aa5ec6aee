import Foundation
import RollcallCore

/// Loads the broker's configuration: defaults, then the file (if any), then `--host`/`--port`,
/// then validation (PROTOCOL §8). Errors name the file and the offending key.
func loadConfiguration(path: String?, host: String?, port: Int?) throws(ConfigurationError) -> Configuration {
    try ConfigurationLoader.load(file: path, host: host, port: port, environment: ProcessInfo.processInfo.environment)
}
