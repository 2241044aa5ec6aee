import RollcallProtocol

/// One leaf key of `config.json`: its dotted path, the JSON it accepts, the values it allows
/// and the ``Configuration`` property it sets. ``ConfigurationKey/all`` lists every key; the
/// loader is driven by that table, never by per-key code.
package struct ConfigurationKey {
    /// What happened when a JSON value was offered to a key.
    package enum Assignment {
        /// The value was stored.
        case stored
        /// The JSON type does not fit the key.
        case wrongType
        /// The type fits but the value is not one of the allowed ones (checked at parse time
        /// only for keys whose property cannot hold an unallowed value, such as `auth.mode`).
        case notAllowed(got: String)
    }

    /// Dotted path, e.g. `presence.maxInstantEvents`.
    let path: String
    /// The accepted JSON, in words, e.g. `an integer`, `a string or null`.
    let expected: String
    /// The allowed values in words, e.g. `from 1 to 1024`; nil when every value of the type is.
    let allowed: String?
    /// Stores a JSON value into the configuration.
    let assign: (JSON, inout Configuration) -> Assignment
    /// The current value as written in JSON, when it is not allowed; nil when it is.
    let rejectedValue: (Configuration) -> String?

    /// The path split at its dots.
    var components: [Substring] { path.split(separator: ".") }
}

// MARK: - Kinds of keys

extension ConfigurationKey {
    /// An integer within `range`. A number with a zero fraction (`5.0`, `1e3`) counts as an integer.
    static func integer(_ path: String, _ keyPath: WritableKeyPath<Configuration, Int>, _ range: ClosedRange<Int>) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "an integer", allowed: "from \(range.lowerBound) to \(range.upperBound)",
            assign: { json, configuration in
                guard let number = json.numberValue, let value = integerValue(number) else { return .wrongType }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { configuration in
                let value = configuration[keyPath: keyPath]
                return range.contains(value) ? nil : String(value)
            }
        )
    }

    /// A number (fractions allowed) within `range`.
    static func number(_ path: String, _ keyPath: WritableKeyPath<Configuration, Double>, _ range: NumberRange) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "a number", allowed: range.description,
            assign: { json, configuration in
                guard let value = json.numberValue?.doubleValue else { return .wrongType }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { configuration in
                let value = configuration[keyPath: keyPath]
                return range.contains(value) ? nil : JSONNumber(value).literal
            }
        )
    }

    /// `true` or `false`.
    static func boolean(_ path: String, _ keyPath: WritableKeyPath<Configuration, Bool>) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "a boolean", allowed: nil,
            assign: { json, configuration in
                guard let value = json.boolValue else { return .wrongType }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { _ in nil }
        )
    }

    /// A non-empty string, optionally one of `choices`.
    static func string(_ path: String, _ keyPath: WritableKeyPath<Configuration, String>, oneOf choices: [String]? = nil) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "a string",
            allowed: choices.map { "one of \($0.joined(separator: ", "))" } ?? "a non-empty string",
            assign: { json, configuration in
                guard let value = json.stringValue else { return .wrongType }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { configuration in
                let value = configuration[keyPath: keyPath]
                let isAllowed = choices.map { $0.contains(value) } ?? !value.isEmpty
                return isAllowed ? nil : quoted(value)
            }
        )
    }

    /// A non-empty string, or `null`.
    static func optionalString(_ path: String, _ keyPath: WritableKeyPath<Configuration, String?>) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "a string or null", allowed: "a non-empty string or null",
            assign: { json, configuration in
                if json.isNull { configuration[keyPath: keyPath] = nil; return .stored }
                guard let value = json.stringValue else { return .wrongType }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { configuration in
                configuration[keyPath: keyPath] == "" ? quoted("") : nil
            }
        )
    }

    /// An array of non-empty strings (possibly empty).
    static func strings(_ path: String, _ keyPath: WritableKeyPath<Configuration, [String]>) -> ConfigurationKey {
        ConfigurationKey(
            path: path, expected: "an array of strings", allowed: "an array of non-empty strings",
            assign: { json, configuration in
                guard let array = json.arrayValue else { return .wrongType }
                var values: [String] = []
                for element in array {
                    guard let value = element.stringValue else { return .wrongType }
                    values.append(value)
                }
                configuration[keyPath: keyPath] = values
                return .stored
            },
            rejectedValue: { configuration in
                configuration[keyPath: keyPath].contains("") ? "an empty string" : nil
            }
        )
    }

    /// A string naming one case of `Choice`.
    static func choice<Choice: RawRepresentable & CaseIterable>(
        _ path: String, _ keyPath: WritableKeyPath<Configuration, Choice>
    ) -> ConfigurationKey where Choice.RawValue == String {
        ConfigurationKey(
            path: path, expected: "a string",
            allowed: "one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))",
            assign: { json, configuration in
                guard let text = json.stringValue else { return .wrongType }
                guard let value = Choice(rawValue: text) else { return .notAllowed(got: quoted(text)) }
                configuration[keyPath: keyPath] = value
                return .stored
            },
            rejectedValue: { _ in nil }
        )
    }

    /// The integer a JSON number denotes, when it is one and fits `Int`.
    private static func integerValue(_ number: JSONNumber) -> Int? {
        if let value = number.intValue { return value }
        guard let value = number.doubleValue, value == value.rounded(),
              abs(value) <= 9_007_199_254_740_992 else { return nil }
        return Int(value)
    }

    private static func quoted(_ text: String) -> String {
        JSON.string(text).compactString
    }
}

/// An interval of allowed numbers; the lower end may be open (`> 0`).
package struct NumberRange: CustomStringConvertible {
    /// Smallest value, or the value everything must exceed when `lowerIsOpen`.
    let lower: Double
    /// True when `lower` itself is not allowed.
    let lowerIsOpen: Bool
    /// Largest allowed value.
    let upper: Double

    /// Numbers greater than `lower`, at most `upper`.
    static func above(_ lower: Double, upTo upper: Double) -> NumberRange {
        NumberRange(lower: lower, lowerIsOpen: true, upper: upper)
    }

    /// Numbers from `lower` to `upper`, both included.
    static func from(_ lower: Double, upTo upper: Double) -> NumberRange {
        NumberRange(lower: lower, lowerIsOpen: false, upper: upper)
    }

    /// True when `value` is finite and inside.
    func contains(_ value: Double) -> Bool {
        value.isFinite && (lowerIsOpen ? value > lower : value >= lower) && value <= upper
    }

    package var description: String {
        let low = JSONNumber(lower).literal, high = JSONNumber(upper).literal
        return lowerIsOpen ? "greater than \(low) and at most \(high)" : "from \(low) to \(high)"
    }
}
