#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place the configuration touches the file system.
extension ConfigurationLoader {
    /// Largest configuration file read; anything bigger is refused rather than read forever.
    public static let maxFileBytes = 1 << 20

    /// Reads, parses and validates the configuration file at `path` (every default when
    /// `path` is nil, as for `rollcall` without `--config`), applying `--host` and `--port` in
    /// between. Every error names the file; an unreadable file says why.
    public static func load(
        file path: String?, host: String? = nil, port: Int? = nil, environment: [String: String]
    ) throws(ConfigurationError) -> Configuration {
        do {
            var configuration = try path.map { path throws(ConfigurationError) in try parse(try readFile(path)) } ?? Configuration()
            apply(host: host, port: port, to: &configuration)
            try validate(configuration, environment: environment)
            return configuration
        } catch {
            throw path.map { error.inFile($0) } ?? error
        }
    }

    /// The bytes of the file at `path`, at most ``maxFileBytes``.
    static func readFile(_ path: String) throws(ConfigurationError) -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw unreadable(path, reason: systemReason(errno)) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maxFileBytes { throw unreadable(path, reason: "larger than \(maxFileBytes) bytes") }
            if count < chunk.count {
                if ferror(file) != 0 { throw unreadable(path, reason: systemReason(errno)) }
                return bytes
            }
        }
    }

    private static func unreadable(_ path: String, reason: String) -> ConfigurationError {
        ConfigurationError(.unreadableFile, keyPath: "", message: "cannot read the configuration file (\(reason))", file: path)
    }

    private static func systemReason(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}
