import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RollcallProtocol

/// `rollcall-cli api <op> [json]`: one server API request (PROTOCOL §10, docs/api.md) to the
/// broker at `--url` (ws → http, wss → https, path `/api/v1/<op>`), with the key from
/// `--api-key` or `$ROLLCALL_API_KEY`. Prints the JSON result (the whole answer with
/// `--json`); an error answer goes to stderr and exits 1, a broker that cannot be reached 2.
struct APICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Call the broker's server API (POST /api/v1/<op>) and print the result.",
        discussion: "The key comes from --api-key or the ROLLCALL_API_KEY environment variable. Ops: publish, getOnlineUsers, getState, getUserChannels, getUserStatus, getChannels, disconnectUser, getInfo.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The op, e.g. getInfo.") var op: String
    @Argument(help: "The body as a JSON object, e.g. '{\"channel\":\"lobby\"}'.") var body: String = "{}"
    @Option(name: .customLong("api-key"), help: "Server API key (default: $ROLLCALL_API_KEY).") var apiKey: String?

    func run() throws {
        do { _ = try JSONParser.parse(body) } catch { throw ValidationError("JSON body is not valid JSON: \(error)") }
        guard let key = apiKey ?? ProcessInfo.processInfo.environment["ROLLCALL_API_KEY"], !key.isEmpty else {
            throw ValidationError("an API key is needed: --api-key or ROLLCALL_API_KEY")
        }
        guard let url = Self.endpoint(brokerURL: global.url, op: op) else {
            throw ValidationError("--url must be ws://, wss://, http:// or https:// (got \(global.url))")
        }
        var request = URLRequest(url: url, timeoutInterval: global.timeout)
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let (status, data) = try Self.send(request)
        let answer: JSON
        do { answer = try JSONParser.parse(Array(data)) } catch {
            Output.fail("HTTP \(status): the answer is not JSON: \(String(decoding: data, as: UTF8.self))", code: 1)
        }
        if answer["ok"]?.boolValue == true {
            Output.line((global.json ? answer : answer["result"] ?? .null).compactString)
            return
        }
        if global.json { Output.line(answer.compactString) }
        let code = answer["error"]?["code"]?.stringValue ?? "UNKNOWN"
        let message = answer["error"]?["message"]?.stringValue ?? ""
        Output.fail("HTTP \(status) \(code): \(message)", code: 1)
    }

    /// `ws://host:port/v1` → `http://host:port/api/v1/<op>` (`wss` → `https`; http(s) kept).
    static func endpoint(brokerURL: String, op: String) -> URL? {
        guard var parts = URLComponents(string: brokerURL), let scheme = parts.scheme?.lowercased() else { return nil }
        switch scheme {
        case "ws", "http": parts.scheme = "http"
        case "wss", "https": parts.scheme = "https"
        default: return nil
        }
        parts.path = "/api/v1/" + op
        parts.query = nil
        return parts.url
    }

    /// Sends `request` and waits for the whole answer; exits 2 when the broker cannot be reached.
    static func send(_ request: URLRequest) throws -> (Int, Data) {
        final class Outcome: @unchecked Sendable {
            var status = 0
            var data = Data()
            var error: Error?
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let task = URLSession.shared.dataTask(with: request) { data, response, error in
            outcome.status = (response as? HTTPURLResponse)?.statusCode ?? 0
            outcome.data = data ?? Data()
            outcome.error = error
            done.signal()
        }
        task.resume()
        done.wait()
        if let error = outcome.error {
            Output.fail("cannot reach \(request.url?.absoluteString ?? "?"): \(error.localizedDescription)", code: 2)
        }
        return (outcome.status, outcome.data)
    }
}
