import RollcallProtocol

/// One decoded request frame: `{"id":…, "op":…, …arguments}`.
package struct Request: Sendable {
    /// The client's id (number or string), or `null` when absent.
    public let id: JSON
    /// The op, decoded once; nil for a name the protocol does not have (`UNKNOWN_OP` once
    /// the session is logged in).
    public let op: Op?
    /// The operation name as sent.
    let opName: String
    /// All members of the frame (including `id` and `op`).
    public let arguments: JSONObject

    /// Decodes a frame. On failure returns the error and whatever id could be read.
    public static func decode(_ bytes: [UInt8]) -> Result<Request, RequestDecodingError> {
        let value: JSON
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            return .failure(RequestDecodingError(id: .null, error: BrokerError(.invalidJSON, "not valid JSON: \(error)")))
        }
        guard case .object(let object) = value else {
            return .failure(RequestDecodingError(id: JSON.null, error: BrokerError(.invalidRequest, "a request must be a JSON object")))
        }
        var id: JSON = .null
        if let rawId = object["id"] {
            switch rawId {
            case .number, .string, .null: id = rawId
            default: return .failure(RequestDecodingError(id: JSON.null, error: BrokerError(.invalidRequest, "id must be a number or a string")))
            }
        }
        guard let opValue = object["op"] else {
            return .failure(RequestDecodingError(id: id, error: BrokerError(.invalidRequest, "missing op")))
        }
        guard case .string(let op) = opValue else {
            return .failure(RequestDecodingError(id: id, error: BrokerError(.invalidRequest, "op must be a string")))
        }
        return .success(Request(id: id, op: Op(rawValue: op), opName: op, arguments: object))
    }
}

/// A frame that is not a valid request, with whatever id could be read from it.
package struct RequestDecodingError: Error, Sendable {
    /// The id to echo (`null` when unreadable).
    public let id: JSON
    /// The error to reply with.
    public let error: BrokerError
}

/// Typed access to request arguments. Wrong JSON types are `INVALID_REQUEST`; values of the
/// right type but out of range are `INVALID_ARGUMENT` (checked by the callers).
extension Request {
    /// A required string.
    public func string(_ key: String) throws(BrokerError) -> String {
        guard let value = arguments[key], !value.isNull else { throw BrokerError(.invalidRequest, "missing \(key)") }
        guard case .string(let s) = value else { throw BrokerError(.invalidRequest, "\(key) must be a string") }
        return s
    }

    /// An optional string (absent or null: nil).
    func optionalString(_ key: String) throws(BrokerError) -> String? {
        guard let value = arguments[key], !value.isNull else { return nil }
        guard case .string(let s) = value else { throw BrokerError(.invalidRequest, "\(key) must be a string") }
        return s
    }

    /// An optional boolean (absent or null: nil).
    func optionalBool(_ key: String) throws(BrokerError) -> Bool? {
        guard let value = arguments[key], !value.isNull else { return nil }
        guard case .bool(let b) = value else { throw BrokerError(.invalidRequest, "\(key) must be a boolean") }
        return b
    }

    /// An optional number as a double (absent or null: nil).
    ///
    /// A literal beyond `Double`'s range (`1e400`, 400 digits) is still a number — the right
    /// JSON type — and comes back as ±infinity, so that callers reject it as out of range
    /// (`INVALID_ARGUMENT`) or clamp it, like any other too-large value.
    func optionalNumber(_ key: String) throws(BrokerError) -> Double? {
        guard let value = arguments[key], !value.isNull else { return nil }
        guard case .number(let n) = value, let d = n.doubleValue, !d.isNaN else {
            throw BrokerError(.invalidRequest, "\(key) must be a number")
        }
        return d
    }

    /// An optional whole number within `range` (absent or null: nil).
    func optionalInteger(_ key: String, in range: ClosedRange<Int>) throws(BrokerError) -> Int? {
        guard let d = try optionalNumber(key) else { return nil }
        guard d == d.rounded(), d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            throw BrokerError(.invalidArgument, "\(key) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return Int(d)
    }

    /// An optional object (absent or null: nil).
    func optionalObject(_ key: String) throws(BrokerError) -> JSONObject? {
        guard let value = arguments[key], !value.isNull else { return nil }
        guard case .object(let o) = value else { throw BrokerError(.invalidRequest, "\(key) must be an object") }
        return o
    }

    /// An optional array of strings (absent or null: nil).
    func optionalStringArray(_ key: String) throws(BrokerError) -> [String]? {
        guard let value = arguments[key], !value.isNull else { return nil }
        guard case .array(let items) = value else { throw BrokerError(.invalidRequest, "\(key) must be an array of strings") }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { throw BrokerError(.invalidRequest, "\(key) must be an array of strings") }
            strings.append(s)
        }
        return strings
    }

    /// A required, valid user id or channel name.
    public func name(_ key: String) throws(BrokerError) -> Name {
        let raw = try string(key)
        guard let name = Name(raw) else {
            throw BrokerError(.invalidArgument, "\(key) must be 1-128 bytes of UTF-8 without control characters")
        }
        return name
    }
}
