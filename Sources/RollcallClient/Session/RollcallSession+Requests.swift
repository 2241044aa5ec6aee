import Foundation
import RollcallProtocol

/// Typed requests over the session's current link, each with a timeout.
extension RollcallSession {
    /// Sends any typed request and waits for its reply (without blocking a thread). Throws the
    /// broker's error reply as ``RollcallError/server(code:codeText:message:retryAfterMs:)``,
    /// code `TIMEOUT` when no reply comes within ``requestTimeout``, code `CLOSED` when there is
    /// no connection or it ends first. Channel membership goes through ``join(_:presence:messages:state:)``
    /// and ``leave(_:)``, which keep it across reconnects.
    public func send<Request: RollcallRequest>(_ request: Request) async throws(RollcallError) -> Request.Result {
        guard let link = lock.withLock({ () -> SessionLink? in
            switch lifecycle.phase {
            case .online(let number), .open(let number): links[number]
            default: nil
            }
        }) else { throw .connection(.closed(Self.notConnected("not connected"))) }
        return try await send(request, on: link)
    }

    /// Sends a request on `link` and waits for its typed result.
    func send<Request: RollcallRequest>(_ request: Request, on link: SessionLink) async throws(RollcallError) -> Request.Result {
        noteOwnChange(request)
        let outcome: Result<Request.Result, RollcallError> = await withCheckedContinuation { continuation in
            self.request(request, on: link) { continuation.resume(returning: $0) }
        }
        return try outcome.get()
    }

    /// Sends a request on `link`; `completion` runs on the link's thread, in order with its events.
    func request<Request: RollcallRequest>(_ request: Request, on link: SessionLink, timeout: Double? = nil,
                                           completion: @escaping @Sendable (Result<Request.Result, RollcallError>) -> Void) {
        link.request(Request.op.rawValue, request.arguments, timeout: timeout ?? requestTimeout) { outcome in
            completion(Self.typed(outcome, Request.self))
        }
    }

    /// A reply (or the link's failure) as the request's typed result.
    static func typed<Request: RollcallRequest>(_ outcome: Result<Reply, ClientError>, _: Request.Type) -> Result<Request.Result, RollcallError> {
        switch outcome {
        case .failure(let error):
            return .failure(.connection(error))
        case .success(let reply):
            guard reply.ok else { return .failure(RollcallError(reply: reply)) }
            do {
                return .success(try Request.decode(reply.result))
            } catch {
                return .failure(.unexpectedResult(op: Request.op.rawValue, result: reply.result.compactString))
            }
        }
    }

    /// Events about the own user are not sent to it but step the channel's seq (PROTOCOL §4):
    /// the roster lets one `seq` be skipped for each own state change.
    func noteOwnChange(_ request: some RollcallRequest) {
        let channel: ChannelRef? = switch request {
        case let setState as Requests.SetState: setState.channel
        case let removeState as Requests.RemoveState: removeState.channel
        default: nil
        }
        guard let channel else { return }
        lock.withLock { rosters[channel]?.allowSkippedSeq() }
    }
}
