import RollcallProtocol

/// What an engine answers for one op: the request's result, and frames for the requesting
/// session that must follow the reply (a snapshot that came back from Redis with a `join`).
package struct EngineAnswer {
    /// The reply's `result`.
    package var result: JSON
    /// Frames for the requesting session, sent right after the reply.
    package var after: [[UInt8]]

    /// An answer with its result and the frames that follow the reply.
    package init(result: JSON, after: [[UInt8]] = []) {
        self.result = result
        self.after = after
    }
}

/// How an engine hands back an op's outcome: at once (the memory engines, inside the call) or
/// when its store replied (the Redis engines, in a later `handle` call). Called exactly once.
package typealias EngineCompletion = (Result<EngineAnswer, BrokerError>) -> Void

extension Result where Success == EngineAnswer, Failure == BrokerError {
    /// The outcome of a synchronous op, as an engine completion takes it.
    package static func answering(_ op: () throws(BrokerError) -> JSON) -> Self {
        do throws(BrokerError) {
            return .success(EngineAnswer(result: try op()))
        } catch {
            return .failure(error)
        }
    }
}
