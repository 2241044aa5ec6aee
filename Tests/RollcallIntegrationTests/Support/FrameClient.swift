import Foundation

/// The hand-made WebSocket client that shows the broker's frames one by one (the client
/// library hides frame boundaries), for batching and queue-limit tests. It answers nothing.
typealias FrameClient = SilentWebSocket

extension SilentWebSocket {
    /// One masked text frame per string, all written with one `send` (pipelined).
    func send(_ texts: [String]) throws {
        try socket.send(texts.flatMap { Self.maskedFrame(Array($0.utf8)) })
    }

    /// Reads text frames until `objects` JSON objects (frames split on `\n`) arrived, the peer
    /// closed, or `timeout` passed. Returns the frames' payloads as received.
    func readFrames(objects: Int, timeout: TimeInterval = 10) -> [String] {
        read(timeout: timeout) { texts in
            texts.reduce(0) { $0 + $1.split(separator: "\n").count } >= objects
        }.texts
    }
}
