import Foundation
import RollcallClient
import RollcallProtocol

/// Keeps the exact bytes of every event line a connection receives (``RollcallConnection/onRawEvent``),
/// so tests can compare what different nodes sent byte for byte. While attached the connection
/// parses no events (``RollcallConnection/nextEvent(timeout:)`` sees none); replies are unaffected.
final class RawEventRecorder: @unchecked Sendable {
    /// One received event line: its bytes and its parsed form.
    struct Line {
        let bytes: [UInt8]
        let json: JSON
        var text: String { String(decoding: bytes, as: UTF8.self) }
        var type: String? { json["type"]?.stringValue }
        var seq: Int? { json["seq"]?.numberValue?.intValue }
    }

    private let lock = NSLock()
    private var received: [[UInt8]] = []

    /// Starts recording `connection`'s event lines.
    init(_ connection: RollcallConnection) {
        connection.onRawEvent = { [weak self] buffer in
            guard let self else { return }
            let bytes = [UInt8](buffer)
            self.lock.withLock { self.received.append(bytes) }
        }
    }

    /// Every event line so far, in arrival order.
    var lines: [Line] {
        lock.withLock { received }.map { bytes in Line(bytes: bytes, json: (try? JSONParser.parse(bytes)) ?? .null) }
    }

    /// The presence events of `channel` so far (snapshots included), in arrival order.
    func presence(in channel: String) -> [Line] {
        lines.filter { $0.json["event"]?.stringValue == "presence" && $0.json["channel"]?.stringValue == channel }
    }

    /// The `message` events of `channel` so far.
    func messages(in channel: String) -> [Line] {
        lines.filter { $0.json["event"]?.stringValue == "message" && $0.json["channel"]?.stringValue == channel }
    }
}
