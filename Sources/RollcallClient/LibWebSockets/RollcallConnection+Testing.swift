// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import CLibWebSockets
import Foundation
import RollcallProtocol

/// Raw escape hatches for hostile tests (`@_spi(Testing) import RollcallClient`): frames the
/// library would never send, and a reader that stops.
extension RollcallConnection {
    /// Sends `bytes` as one text message, unchecked (may be invalid UTF-8 or not JSON).
    @_spi(Testing)
    public func sendRawText(_ bytes: [UInt8]) { enqueue(.text(bytes)) }

    /// Sends `text` as one text message, unchecked.
    @_spi(Testing)
    public func sendRawText(_ text: String) { enqueue(.text(Array(text.utf8))) }

    /// Sends `bytes` as one binary message.
    @_spi(Testing)
    public func sendBinary(_ bytes: [UInt8]) { enqueue(.binary(bytes)) }

    /// Sends `bytes` as one message split into fragments of at most `fragmentSize` bytes
    /// (first a text/binary frame without FIN, then continuation frames).
    @_spi(Testing)
    public func sendFragmented(_ bytes: [UInt8], fragmentSize: Int, binary: Bool = false) {
        precondition(fragmentSize > 0)
        var start = 0
        var items: [Outgoing] = []
        repeat {
            let end = min(bytes.count, start + fragmentSize)
            items.append(.fragment(Array(bytes[start..<end]), binary: binary, first: start == 0, fin: end == bytes.count))
            start = end
        } while start < bytes.count
        enqueue(contentsOf: items)
    }

    /// Stops reading from the socket (lws rx flow control): the broker's output piles up in
    /// the kernel buffers and then in the broker, as with a stalled consumer. Pings are not
    /// answered while paused.
    @_spi(Testing)
    public func pauseReading() {
        runtime.post { [self] in if let wsi { _ = lws_rx_flow_control(wsi, 0) } }
    }

    /// Resumes reading after ``pauseReading()``.
    @_spi(Testing)
    public func resumeReading() {
        runtime.post { [self] in if let wsi { _ = lws_rx_flow_control(wsi, 1) } }
    }
}
#endif
