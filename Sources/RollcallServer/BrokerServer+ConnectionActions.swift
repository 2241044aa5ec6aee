import CRollcallShim
import RollcallCore

/// The lws glue for ``ConnectionLifecycle``: the machine decides, this carries it out.
extension BrokerServer {
    /// What the callback that carried out actions does next.
    enum ActionOutcome: Equatable {
        /// Go on with the callback.
        case carryOn
        /// Stop writing for now: a writable callback was requested (a ping filled the pipe).
        case yield
        /// Return -1: lws closes the connection now.
        case hangUp
    }

    /// Carries out `actions` for `record`; returns -1 when lws must close the connection
    /// from the current callback, else 0.
    @discardableResult
    func perform(_ actions: ConnectionActions, for record: ConnectionRecord) -> Int32 {
        carryOut(actions, for: record) == .hangUp ? -1 : 0
    }

    /// Carries out `actions` for `record` in order, stopping at the first that ends the
    /// callback (a failed write, a hang-up, a ping that filled the pipe).
    func carryOut(_ actions: ConnectionActions, for record: ConnectionRecord) -> ActionOutcome {
        let wsi = record.wsi
        for action in actions {
            switch action {
            case .requestWritable:
                lws_callback_on_writable(wsi)
            case .setTimeout(let seconds):
                lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, seconds)
            case .killNow:
                lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, rollcall_to_kill_async)
            case .hangUp:
                return .hangUp
            case .discardBuffers:
                record.outbound.removeAll()
                record.assembler.reset()
            case .writePing:
                if writePing(wsi) < 0 { return .hangUp }
                if lws_send_pipe_choked(wsi) != 0 {
                    lws_callback_on_writable(wsi)
                    return .yield
                }
            case .writeCloseFrame(let code, let reason):
                if writeCloseFrame(wsi, code: code, reason: reason) < 0 { return .hangUp }
                // lws keeps what the kernel did not take and calls back once it is flushed.
                let next = record.lifecycle.closeFrameWritten(pipeChoked: lws_send_pipe_choked(wsi) != 0)
                if carryOut(next, for: record) == .hangUp { return .hangUp }
            case .halfCloseAndLinger:
                if rollcall_half_close(wsi) != 0 { return .hangUp }
            case .reportEnded(let end):
                feed(.ended(record.id, end))
            case .scheduleHeartbeatCheck(let deadline):
                records.scheduleHeartbeatCheck(record.id, at: deadline)
            }
        }
        return .carryOn
    }
}
