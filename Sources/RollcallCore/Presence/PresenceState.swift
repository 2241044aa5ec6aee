import RollcallProtocol

/// One member's state in one channel: string keys to string values, kept in byte order of
/// the keys. Keys and values compare by bytes (never by Unicode equivalence).
package struct PresenceState: Equatable {
    /// The entries in byte order of key.
    private(set) var entries: [(key: String, value: String)] = []
    /// UTF-8 bytes of every key and value.
    package private(set) var totalBytes = 0

    package static let empty = PresenceState()

    /// A state with no keys.
    package init() {}

    package var isEmpty: Bool { entries.isEmpty }
    package var count: Int { entries.count }

    /// Sets `key` to `value`, replacing an existing value.
    package mutating func set(_ key: String, _ value: String) {
        let (index, found) = position(of: key)
        if found {
            totalBytes += value.utf8.count - entries[index].value.utf8.count
            entries[index].value = value
        } else {
            totalBytes += key.utf8.count + value.utf8.count
            entries.insert((key, value), at: index)
        }
    }

    /// True when `key` has a value.
    package func contains(_ key: String) -> Bool { position(of: key).1 }

    /// Removes `key`; false when it was absent.
    @discardableResult
    package mutating func remove(_ key: String) -> Bool {
        let (index, found) = position(of: key)
        guard found else { return false }
        totalBytes -= entries[index].key.utf8.count + entries[index].value.utf8.count
        entries.remove(at: index)
        return true
    }

    /// Writes the state as a JSON object.
    package func write(to writer: inout JSONWriter) {
        writer.stringMap(entries)
    }

    /// The state as a JSON object.
    package var json: JSON {
        .object(JSONObject(entries.map { ($0.key, JSON.string($0.value)) }))
    }

    package static func == (a: PresenceState, b: PresenceState) -> Bool {
        a.totalBytes == b.totalBytes && a.entries.count == b.entries.count
            && zip(a.entries, b.entries).allSatisfy { x, y in
                x.key.utf8.elementsEqual(y.key.utf8) && x.value.utf8.elementsEqual(y.value.utf8)
            }
    }

    private func position(of key: String) -> (index: Int, found: Bool) {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            let order = byteOrder(entries[mid].key, key)
            if order == 0 { return (mid, true) }
            if order < 0 { low = mid + 1 } else { high = mid }
        }
        return (low, false)
    }
}

/// Lexicographic byte comparison of two strings' UTF-8: negative, zero or positive.
func byteOrder(_ a: String, _ b: String) -> Int {
    var a = a, b = b
    return a.withUTF8 { x in b.withUTF8 { y in compareBytes(x, y) } }
}

/// A validated `state` argument: its entries in request order (a repeated key: last wins).
package struct StateUpdate: Sendable {
    package let entries: [(key: String, value: String)]

    /// Validates every entry of `object` against the per-entry limits.
    ///
    /// A value that is not a string is `INVALID_REQUEST` (a wrong JSON type, like every other
    /// argument of the wrong type); an empty key is `INVALID_ARGUMENT`; then `KEY_TOO_LONG`
    /// and `VALUE_TOO_LONG`.
    init(_ object: JSONObject, limits: Configuration.State) throws(BrokerError) {
        var entries: [(key: String, value: String)] = []
        entries.reserveCapacity(object.count)
        for member in object.members {
            guard case .string(let value) = member.value else {
                throw BrokerError(.invalidRequest, "state values must be strings (key \"\(member.key)\")")
            }
            guard !member.key.isEmpty else { throw BrokerError(.invalidArgument, "state keys must not be empty") }
            guard member.key.utf8.count <= limits.maxKeyBytes else {
                throw BrokerError(.keyTooLong, "state key longer than \(limits.maxKeyBytes) bytes")
            }
            guard value.utf8.count <= limits.maxValueBytes else {
                throw BrokerError(.valueTooLong, "state value of \"\(member.key)\" longer than \(limits.maxValueBytes) bytes")
            }
            entries.append((member.key, value))
        }
        self.entries = entries
    }

    /// `base` with this update merged in; throws `TOO_MANY_KEYS` or `STATE_TOO_LARGE` when
    /// the result breaks the limits.
    package func merged(into base: PresenceState, limits: Configuration.State) throws(BrokerError) -> PresenceState {
        var state = base
        for entry in entries { state.set(entry.key, entry.value) }
        try state.checkTotals(limits)
        return state
    }
}

extension PresenceState {
    /// Throws when the whole state breaks `maxKeys` or `maxTotalBytes`.
    func checkTotals(_ limits: Configuration.State) throws(BrokerError) {
        guard count <= limits.maxKeys else {
            throw BrokerError(.tooManyKeys, "state would have \(count) keys; at most \(limits.maxKeys)")
        }
        guard totalBytes <= limits.maxTotalBytes else {
            throw BrokerError(.stateTooLarge, "state would be \(totalBytes) bytes; at most \(limits.maxTotalBytes)")
        }
    }
}
