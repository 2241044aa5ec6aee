import CRedisShim

/// One Redis reply (RESP2), copied out of hiredis' `redisReply` once, in the reply callback.
public enum RedisReply: Equatable {
    /// A status line such as `OK` or `PONG`.
    case status(String)
    /// An error line such as `ERR unknown command` (at the top level a command's completion
    /// gets ``RedisError/Code/errorReply`` instead; inside an array it stays a value).
    case error(String)
    /// An integer.
    case integer(Int64)
    /// A bulk string: bytes, binary-safe.
    case bulk([UInt8])
    /// An array (multi-bulk), possibly nested.
    case array([RedisReply])
    /// A nil bulk string or nil array.
    case null

    /// The bulk string's bytes as UTF-8 text (nil for other replies or invalid UTF-8).
    public var text: String? {
        switch self {
        case .bulk(let bytes): String(validating: bytes, as: UTF8.self)
        case .status(let line): line
        default: nil
        }
    }

    /// The integer, or nil.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of an array, or nil.
    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Copies a hiredis reply (which hiredis frees after the callback returns).
    init(copying reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING:
            self = .bulk(Self.bytes(value.str, value.len))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(Int(value.elements))
            for index in 0..<Int(value.elements) {
                if let element = value.element[index] { elements.append(RedisReply(copying: element)) } else { elements.append(.null) }
            }
            self = .array(elements)
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(value.integer))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        default:
            self = .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}
