import Foundation
import Logging
import RollcallProtocol

/// One line of `log.format: "json"` (PROTOCOL §8, 1.2): a compact JSON object with `ts`
/// (ISO 8601 in UTC with milliseconds), `level`, `msg`, `logger` (the swift-log label) and then
/// the message's metadata, each field under its own key. A metadata key that would overwrite
/// one of those four is written with a leading `_` (`_msg`). No raw newline: compact JSON
/// escapes it, so one message is always one line.
///
/// ```swift
/// JSONLogLine.encode(level: .info, message: "listening on 127.0.0.1:8080", label: "rollcall")
/// // {"ts":"2026-11-27T06:21:12.345Z","level":"info","msg":"listening on 127.0.0.1:8080","logger":"rollcall"}
/// ```
public enum JSONLogLine {
    /// The keys every line has, in this order.
    public static let reservedKeys: Set<String> = ["ts", "level", "msg", "logger"]

    /// The line for one message (without the trailing newline).
    public static func encode(
        level: Logger.Level, message: String, label: String, metadata: Logger.Metadata = [:], at date: Date = Date()
    ) -> String {
        var members: [(key: String, value: JSON)] = [
            ("ts", .string(timestamp(date))), ("level", .string(level.rawValue)), ("msg", .string(message)),
            ("logger", .string(label)),
        ]
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            members.append((reservedKeys.contains(key) ? "_" + key : key, json(value)))
        }
        return JSON.object(JSONObject(members)).compactString
    }

    /// `2026-11-27T06:21:12.345Z`.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds % 1000), 3))Z"
    }

    /// A metadata value as JSON: strings stay strings, lists arrays, dictionaries objects.
    static func json(_ value: Logger.MetadataValue) -> JSON {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let dictionary):
            .object(JSONObject(dictionary.keys.sorted().compactMap { key in dictionary[key].map { (key, json($0)) } }))
        }
    }
}
