import Foundation
import RollcallTestSupport

/// Runs a program to completion (through ``ChildProcess``) and collects its output.
enum ExternalCommand {
    /// The exit status (or 128 + signal) and the output of `executable arguments…`, run in
    /// the package root; throws if it does not exit within `timeout`.
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 30) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        let child = try ChildProcess(executable: executable, arguments: arguments, directory: BrokerProcess.packageRoot.path)
        let output = child.output
        guard let status = child.waitForExit(timeout: timeout) else {
            child.send(SIGKILL)
            _ = child.waitForExit(timeout: 5)
            throw HarnessError("\(executable) \(arguments.joined(separator: " ")) did not exit within \(timeout) s")
        }
        output.waitForEOF(timeout: 5)
        let code = (status & 0x7f) != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
        return (code, output.stdoutText, output.stderrText)
    }

    /// The path of `name` on `PATH`, or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

extension ExternalCommand {
    /// Runs the broker binary on `config` (written to a temporary file) until it exits, for
    /// start checks that must refuse; throws if it is still running after `timeout`.
    static func runBroker(config: [String: Any], timeout: TimeInterval = 15) throws -> (status: Int32, stdout: String, stderr: String) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-refused-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try run(BrokerProcess.binary, ["--config", url.path, "--port", "0"], timeout: timeout)
    }
}
