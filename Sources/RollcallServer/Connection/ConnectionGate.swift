import Logging

/// The connection cap on the service thread (see ``ConnectionCap`` and `docs/security.md`):
/// counts the descriptors the broker's connections hold — every accepted socket, in any
/// phase (lws `WSI_CREATE` … `WSI_DESTROY`), plus every static file being sent — and decides
/// whether a new one is served, answered 503 or closed at accept. It logs one line when it
/// starts refusing and one when it accepts again.
struct ConnectionGate {
    /// Text of the 503 answered above the cap.
    static let refusalBody = "too many connections\n"

    /// The cap, set when the context is created (from the raised open-file limit).
    var cap = ConnectionCap(descriptorLimit: 1024)
    /// Every accepted socket.
    private(set) var openSockets = Set<OpaquePointer>()
    /// Connections sending a static file (each holds the file's descriptor too).
    private var fileTransfers = Set<OpaquePointer>()
    /// True while new connections are being refused (for one log line per episode).
    private(set) var isRefusing = false
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Descriptors the broker's connections hold now: accepted sockets plus files being sent.
    var descriptorsInUse: Int { openSockets.count + fileTransfers.count }

    /// lws created a socket (`LWS_CALLBACK_WSI_CREATE`).
    mutating func socketCreated(_ wsi: OpaquePointer) { openSockets.insert(wsi) }

    /// lws destroyed a socket (`LWS_CALLBACK_WSI_DESTROY`): it and any file it sent are gone.
    mutating func socketDestroyed(_ wsi: OpaquePointer) {
        openSockets.remove(wsi)
        fileTransfers.remove(wsi)
    }

    /// A static file started going out on `wsi`.
    mutating func fileStarted(_ wsi: OpaquePointer) { fileTransfers.insert(wsi) }

    /// The static file on `wsi` was sent (`LWS_CALLBACK_HTTP_FILE_COMPLETION`).
    mutating func fileEnded(_ wsi: OpaquePointer) { fileTransfers.remove(wsi) }

    /// True when this connection (already counted) is beyond the cap: its upgrade or static
    /// file request gets 503 (counted in `metrics`).
    mutating func refusesForCap(_ metrics: inout TransportMetrics) -> Bool {
        let over = descriptorsInUse > cap.limit
        if over {
            metrics.connectionsRefused += 1
            noteRefusing()
        } else if isRefusing, descriptorsInUse < cap.limit {
            isRefusing = false
            logger.notice("accepting connections again", metadata: ["connections": "\(descriptorsInUse)"])
        }
        return over
    }

    /// `LWS_CALLBACK_FILTER_NETWORK_CONNECTION`: false closes the just-accepted socket at
    /// once, when even the 503 band is full (counted in `metrics`).
    mutating func admitsNewSocket(_ metrics: inout TransportMetrics) -> Bool {
        guard descriptorsInUse >= cap.hardLimit else { return true }
        metrics.connectionsRefused += 1
        metrics.connectionsClosedAtAccept += 1
        noteRefusing()
        return false
    }

    private mutating func noteRefusing() {
        guard !isRefusing else { return }
        isRefusing = true
        logger.warning("connection cap reached: refusing new connections with 503", metadata: [
            "cap": "\(cap.limit)", "descriptorLimit": "\(cap.descriptorLimit)",
        ])
    }
}
