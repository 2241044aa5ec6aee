import RollcallClient
import Testing

/// `SocketLifecycle`: every way a client socket ends, and the `CloseInfo` it reports, once.
@Suite struct SocketLifecycleTests {
    private func open() -> SocketLifecycle {
        var socket = SocketLifecycle()
        _ = socket.start()
        _ = socket.established()
        return socket
    }

    @Test("start once, then the handshake: its slot is freed and the owner told")
    func handshake() {
        var socket = SocketLifecycle()
        #expect(socket.start() == [.beginHandshake])
        #expect(socket.start().isEmpty)
        #expect(socket.isHandshaking)
        #expect(socket.established() == [.endHandshake, .reportOpen])
        #expect(socket.state == .open)
        #expect(socket.established().isEmpty)
    }

    @Test("a failed handshake: the slot is freed, a dropped end with the connect error")
    func failedHandshake() {
        var socket = SocketLifecycle()
        _ = socket.start()
        let info = CloseInfo(code: nil, reason: "refused", closedByServer: false, dropped: true)
        #expect(socket.failed("refused") == [.endHandshake, .finish(info, connectError: "refused")])
        #expect(socket.closeInfo == info)
        #expect(socket.socketClosed().isEmpty && socket.destroyed().isEmpty, "reported once")
        var destroyedEarly = SocketLifecycle()
        _ = destroyedEarly.start()
        #expect(destroyedEarly.destroyed() == [.endHandshake, .finish(CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true),
                                                                      connectError: "connection failed")])
    }

    @Test("the broker's close frame: its code and reason, by the server")
    func peerClose() {
        var socket = open()
        socket.peerClosed(code: 4409, reason: "session limit")
        #expect(socket.socketClosed() == [.finish(CloseInfo(code: 4409, reason: "session limit", closedByServer: true, dropped: false), connectError: nil)])
    }

    @Test("our close frame: our code, not by the server; the broker's answer keeps it ours only if it came first")
    func ourClose() {
        var socket = open()
        socket.closeFrameWritten(code: 1000, reason: "bye")
        #expect(socket.socketClosed() == [.finish(CloseInfo(code: 1000, reason: "bye", closedByServer: false, dropped: false), connectError: nil)])
        var crossed = open()
        crossed.closeFrameWritten(code: 1000, reason: "")
        crossed.peerClosed(code: 1001, reason: "shutdown")
        #expect(crossed.destroyed() == [.finish(CloseInfo(code: 1001, reason: "shutdown", closedByServer: true, dropped: false), connectError: nil)])
    }

    @Test("a drop, ours or the network's: no code, dropped")
    func drops() {
        var ours = open()
        ours.closeFrameWritten(code: 1000, reason: "")
        ours.dropWritten()
        #expect(ours.socketClosed() == [.finish(CloseInfo(code: nil, reason: "", closedByServer: false, dropped: true), connectError: nil)])
        var network = open()
        #expect(network.destroyed(reason: "reset") == [.finish(CloseInfo(code: nil, reason: "reset", closedByServer: false, dropped: true), connectError: nil)])
        #expect(network.isClosed)
    }
}
