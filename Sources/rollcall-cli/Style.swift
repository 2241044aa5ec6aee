import ArgumentParser
import Foundation

/// `--color always|never|auto`.
enum ColorChoice: String, ExpressibleByArgument, CaseIterable {
    case always, never, auto
}

/// ANSI styling for human-readable output: a no-op when disabled (not a terminal,
/// `NO_COLOR` set, `--color never`, or `--json`).
struct Style: Sendable {
    /// Whether escape codes are emitted.
    let enabled: Bool

    /// Plain text, no escape codes.
    static let plain = Style(enabled: false)

    /// Resolves `--color`: `always` and `never` force; `auto` colours only when stdout is a
    /// terminal, `NO_COLOR` is unset or empty (https://no-color.org) and `TERM` is not `dumb`.
    static func resolve(_ choice: ColorChoice, environment: [String: String] = ProcessInfo.processInfo.environment) -> Style {
        switch choice {
        case .always: return Style(enabled: true)
        case .never: return .plain
        case .auto:
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .plain }
            if environment["TERM"] == "dumb" { return .plain }
            return Style(enabled: isatty(STDOUT_FILENO) == 1)
        }
    }

    private func wrap(_ text: some StringProtocol, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : String(text)
    }

    func bold(_ text: some StringProtocol) -> String { wrap(text, "1") }
    func dim(_ text: some StringProtocol) -> String { wrap(text, "2") }
    func red(_ text: some StringProtocol) -> String { wrap(text, "31") }
    func green(_ text: some StringProtocol) -> String { wrap(text, "32") }
    func yellow(_ text: some StringProtocol) -> String { wrap(text, "33") }
    func blue(_ text: some StringProtocol) -> String { wrap(text, "34") }
    func cyan(_ text: some StringProtocol) -> String { wrap(text, "36") }

    /// A presence event type in its colour: join green, leave yellow, timeout red,
    /// stateChanged cyan, snapshot/interval blue.
    func presenceType(_ type: String) -> String {
        switch type {
        case "join": green(type)
        case "leave": yellow(type)
        case "timeout": red(type)
        case "stateChanged": cyan(type)
        default: blue(type)
        }
    }

    /// A user status in its colour: online green, offline red, loggedOut yellow.
    func userStatus(_ status: String) -> String {
        switch status {
        case "online": green(status)
        case "offline": red(status)
        case "loggedOut": yellow(status)
        default: status
        }
    }
}
