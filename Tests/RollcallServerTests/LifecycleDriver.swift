@testable import RollcallServer
import RollcallCore
import RollcallProtocol

/// Drives one ``ConnectionLifecycle`` through inputs and keeps every action it asked for, so
/// a test can check both each step's actions and the whole story (how often `.ended` went out).
struct LifecycleDriver {
    var lifecycle: ConnectionLifecycle
    private(set) var all: [ConnectionAction] = []

    init(openedAt now: Int64 = 0) {
        lifecycle = ConnectionLifecycle(openedAt: now)
    }

    var state: ConnectionLifecycle.State { lifecycle.state }

    /// The `.ended` events the core was told, in order.
    var reportedEnds: [ConnectionEnd] {
        all.compactMap { if case .reportEnded(let end) = $0 { end } else { nil } }
    }

    private mutating func record(_ actions: ConnectionActions) -> [ConnectionAction] {
        let list = Array(actions)
        all += list
        return list
    }

    mutating func peerSentClose() -> [ConnectionAction] { record(lifecycle.peerSentClose()) }
    mutating func protocolFault(_ code: CloseCode, _ reason: String = "fault") -> [ConnectionAction] {
        record(lifecycle.protocolFault(code, reason: reason))
    }
    mutating func coreClosed(_ code: CloseCode, _ reason: String) -> [ConnectionAction] {
        record(lifecycle.coreClosed(code, reason: reason))
    }
    mutating func shutdown() -> [ConnectionAction] { record(lifecycle.shutdown()) }
    mutating func slowConsumerCut() -> [ConnectionAction] { record(lifecycle.slowConsumerCut()) }
    mutating func writable() -> [ConnectionAction] { record(lifecycle.writable()) }
    mutating func queueFlushed(pipeChoked: Bool = false) -> [ConnectionAction] {
        record(lifecycle.queueFlushed(pipeChoked: pipeChoked))
    }
    mutating func closeFrameWritten(pipeChoked: Bool = false) -> [ConnectionAction] {
        record(lifecycle.closeFrameWritten(pipeChoked: pipeChoked))
    }
    mutating func heartbeatCheck(at now: Int64, _ policy: HeartbeatPolicy) -> [ConnectionAction] {
        record(lifecycle.heartbeatCheck(at: now, policy: policy))
    }
    mutating func writeFailed() -> [ConnectionAction] { record(lifecycle.writeFailed()) }
    mutating func heard(at now: Int64) { lifecycle.heard(at: now) }
    mutating func socketClosed() -> [ConnectionAction] { record(lifecycle.socketClosed()) }

    /// The writable callback with an empty queue and a clear pipe, as the glue runs it: the
    /// lifecycle's own actions, then the queue-flushed step, then (when a close frame was
    /// written) the close-frame-written step.
    mutating func writableWithEmptyQueue() -> [ConnectionAction] {
        var actions = writable()
        actions += queueFlushed()
        if actions.contains(where: { if case .writeCloseFrame = $0 { true } else { false } }) {
            actions += closeFrameWritten()
        }
        return actions
    }
}

extension ConnectionLifecycle.State {
    static let openIdle = Self.open(pingDue: false)
}
