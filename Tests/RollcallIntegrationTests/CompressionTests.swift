import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `http.permessageDeflate` (RFC 7692 through libwebsockets): off by default, so an offer is
/// ignored; on, the broker accepts the offer (what browsers send) and a client that did not
/// offer it still talks plain frames.
@Suite("WebSocket compression (permessage-deflate)")
struct CompressionTests {
    /// The upgrade response to a handshake that offers permessage-deflate as browsers do.
    func upgradeOfferingDeflate(_ broker: BrokerProcess) throws -> HTTPResponse {
        let socket = try RawSocket(port: broker.port)
        try socket.send(
            "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:\(broker.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
        return try RawHTTP.readResponse(socket, timeout: 5)
    }

    @Test("off by default: the offer is not accepted")
    func offByDefault() throws {
        let broker = try BrokerProcess()
        let response = try upgradeOfferingDeflate(broker)
        #expect(response.status == 101)
        #expect(response.headers["sec-websocket-extensions"] == nil)
    }

    @Test("on: the offer is accepted; a client that offers nothing is served uncompressed")
    func onAndUsed() throws {
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": true]])
        let response = try upgradeOfferingDeflate(broker)
        #expect(response.status == 101)
        #expect(response.headers["sec-websocket-extensions"]?.contains("permessage-deflate") == true)

        let client = try FrameClient(port: broker.port)
        try client.send(["{\"id\":0,\"op\":\"login\",\"userId\":\"alice\"}"])
        #expect(client.readFrames(objects: 1).first?.contains("\"ok\":true") == true)
    }
}
