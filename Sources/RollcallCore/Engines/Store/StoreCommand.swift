/// One command for the cluster's shared store (Redis, PROTOCOL §9), as the core asks for it.
/// The core never talks to Redis: it returns ``Action/store(_:_:_:)`` with these, the transport
/// runs them on its Redis connection and hands the replies back as
/// ``InboundEvent/storeReplied(_:_:)`` — a continuation.
public enum StoreCommand: Sendable, Equatable {
    /// A Lua script with its arguments (`EVALSHA`, `EVAL` when Redis has not cached it).
    case script(StoreScript, arguments: [[UInt8]])
    /// A plain command: its words, binary-safe.
    case command([[UInt8]])
}

/// A Lua script the cluster engines run. The first ``keyCount`` arguments of a call are the
/// keys it declares (`KEYS`, by which a Redis Cluster routes it to a slot's master); the rest
/// are its `ARGV` (docs/cluster.md, "Keys").
public struct StoreScript: Sendable, Hashable {
    /// A short name for logs and metrics.
    public let name: String
    /// The Lua source.
    public let source: String
    /// How many of a call's first arguments are keys (`KEYS`).
    public let keyCount: Int

    /// A script named `name` (logs and metrics) with its Lua source, whose calls pass
    /// `keyCount` keys before their other arguments.
    public init(name: String, source: String, keyCount: Int = 0) {
        self.name = name
        self.source = source
        self.keyCount = keyCount
    }
}

/// A reply from the store (RESP2's types).
public indirect enum StoreReply: Sendable, Equatable {
    case status(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8])
    case array([StoreReply])
    case null

    /// Bytes of a bulk or status reply.
    public var bytes: [UInt8]? {
        switch self {
        case .bulk(let bytes): bytes
        case .status(let text): Array(text.utf8)
        default: nil
        }
    }

    /// Text of a bulk or status reply.
    public var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    /// An integer reply, or a bulk reply holding a decimal integer.
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .bulk, .status: text.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The elements of an array reply.
    public var elements: [StoreReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
}

/// Why a store call failed as a whole (Redis unreachable, a watchdog timeout, a lost link):
/// the error a request that needed the store is answered with — `UNAVAILABLE` with
/// `retryAfterMs` for an unreachable store, `INTERNAL` otherwise. One type with
/// ``BrokerError``, so a failure goes to the client as it is.
public typealias StoreFailure = BrokerError

extension BrokerError {
    /// The error a request that needed the store is answered with: the failure itself.
    package var brokerError: BrokerError { self }
}

/// Names one store call, so that its replies find their way back to what asked for them.
public struct StoreTicket: Hashable, Sendable, CustomStringConvertible {
    /// The raw number, unique for the broker's lifetime.
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "t\(rawValue)" }
}

/// Which of the link's two lanes a store call waits in when the link is busy
/// (`StoreCallGate`): a client's request goes before the node's own upkeep.
public enum StoreCallPriority: Sendable, Equatable {
    /// Made for a request a client or the server API is waiting on (the default).
    case request
    /// The node's upkeep: the reaper's and the scanner's passes over the key groups, which
    /// are made again at the next tick when they fail.
    case background
}

import RollcallProtocol
