import CRollcallShim

/// Text of the 503 answered above the connection cap.
enum ConnectionCapPolicy {
    static let refusalBody = "too many connections\n"
}

/// The connection cap on the service thread (see ``ConnectionCap`` and `docs/security.md`).
extension BrokerServer {
    /// Descriptors the broker's connections hold now: accepted sockets plus files being sent.
    var descriptorsInUse: Int { openSockets.count + fileTransfers.count }

    /// True when this connection (already counted) is beyond the cap: its upgrade or static
    /// file request gets 503.
    func refusesForConnectionCap() -> Bool {
        let over = descriptorsInUse > connectionCap.limit
        if over {
            metrics.connectionsRefused += 1
            noteRefusing()
        } else if refusingConnections, descriptorsInUse < connectionCap.limit {
            refusingConnections = false
            logger.notice("accepting connections again", metadata: ["connections": "\(descriptorsInUse)"])
        }
        return over
    }

    /// `LWS_CALLBACK_FILTER_NETWORK_CONNECTION`: false closes the just-accepted socket at
    /// once, when even the 503 band is full.
    func admitsNewSocket() -> Bool {
        guard descriptorsInUse >= connectionCap.hardLimit else { return true }
        metrics.connectionsRefused += 1
        metrics.connectionsClosedAtAccept += 1
        noteRefusing()
        return false
    }

    private func noteRefusing() {
        guard !refusingConnections else { return }
        refusingConnections = true
        logger.warning("connection cap reached: refusing new connections with 503", metadata: [
            "cap": "\(connectionCap.limit)", "descriptorLimit": "\(connectionCap.descriptorLimit)",
        ])
    }
}
