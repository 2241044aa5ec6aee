@testable import RollcallServer
import RollcallCore
import RollcallProtocol
import Testing

/// A close racing a drop or the peer's own close: the end still goes to the core at most
/// once, and never for a close the core asked for.
@Suite("Connection lifecycle: close races")
struct ConnectionCloseRaceTests {
    @Test func coreCloseThenTCPDropBeforeTheFrameWentReportsNothing() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.loginTimeout, "login timeout")
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .brokerClose)
        #expect(driver.reportedEnds == [])
    }

    @Test func dropDuringTheFlushAfterASlowConsumerCutReportsOnlyTheCut() {
        var driver = LifecycleDriver()
        _ = driver.slowConsumerCut()
        #expect(driver.queueFlushed(pipeChoked: true) == [.requestWritable])
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .slowConsumer)
        #expect(driver.reportedEnds == [.abnormal(.slowConsumer)])
    }

    @Test func dropAfterAProtocolFaultReportsOnlyTheFault() {
        var driver = LifecycleDriver()
        _ = driver.protocolFault(.frameTooBig, "too big")
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [.closeFrame])
    }

    @Test func dropWhileOurCloseFrameIsStillWithLwsReportsNothing() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        _ = driver.queueFlushed()
        #expect(driver.closeFrameWritten(pipeChoked: true) == [.requestWritable])
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [])
    }

    @Test func peerCloseWhileWeLingerIsItsAnswerSoWeHangUp() {
        var driver = LifecycleDriver()
        _ = driver.shutdown()
        _ = driver.writableWithEmptyQueue()
        #expect(driver.peerSentClose() == [.hangUp])
        #expect(driver.state == .lingering)
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .shutdown)
        #expect(driver.reportedEnds == [])
    }

    @Test func peerCloseBeforeOurFrameWentMeansNoCloseFrameFromUs() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.peerSentClose() == [])
        #expect(driver.state == .peerClosing)
        // lws answers the peer's close frame; we write nothing more.
        #expect(driver.writableWithEmptyQueue() == [])
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .brokerClose)
        #expect(driver.reportedEnds == [])
    }

    @Test func peerCloseWhileOurFrameIsStillWithLwsWaitsForTheFlushAsBefore() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        _ = driver.queueFlushed()
        _ = driver.closeFrameWritten(pipeChoked: true)
        #expect(driver.peerSentClose() == [])
        #expect(driver.state == .closeFrameSent)
    }

    @Test func peerCloseAfterASlowConsumerCutIsNotReportedAgain() {
        var driver = LifecycleDriver()
        _ = driver.slowConsumerCut()
        #expect(driver.peerSentClose() == [])
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [.abnormal(.slowConsumer)])
    }

    @Test func coreCloseRacingTheClientsCloseFrameLeavesTheEndToTheCore() {
        var driver = LifecycleDriver()
        _ = driver.peerSentClose()
        // The core closes (logout reply) before lws reports CLOSED: lws is already answering
        // the peer, so nothing is written, and the core needs no `.ended`.
        #expect(driver.coreClosed(.logout, "logout") == [])
        #expect(driver.state == .peerClosing)
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .brokerClose)
        #expect(driver.reportedEnds == [])
    }

    @Test func shutdownRacingTheClientsCloseFrameCountsAsShutdown() {
        var driver = LifecycleDriver()
        _ = driver.peerSentClose()
        #expect(driver.shutdown() == [])
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .shutdown)
    }

    @Test func heartbeatDropThenCloseReportsOnlyTheTimeout() {
        let policy = HeartbeatPolicy(intervalMs: 1000, timeoutMs: 1000)
        var driver = LifecycleDriver(openedAt: 0)
        _ = driver.heartbeatCheck(at: 1000, policy)
        #expect(driver.state == .killed)
        #expect(driver.peerSentClose() == [])
        #expect(driver.coreClosed(.logout, "logout") == [])
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .heartbeatTimeout)
        #expect(driver.reportedEnds == [.abnormal(.heartbeatTimeout)])
    }

    /// Every sequence of up to four inputs, then lws CLOSED: the core hears of the end exactly
    /// once, from the transport or because it closed the connection itself.
    @Test func theCoreLearnsOfEveryEndExactlyOnce() {
        let policy = HeartbeatPolicy(intervalMs: 10, timeoutMs: 10)
        let inputs: [(String, (inout LifecycleDriver) -> Void)] = [
            ("peerSentClose", { _ = $0.peerSentClose() }),
            ("protocolFault", { _ = $0.protocolFault(.invalidUTF8) }),
            ("coreClosed", { _ = $0.coreClosed(.unauthorized, "x") }),
            ("coreShutdown", { _ = $0.coreClosed(.shutdown, "x") }),
            ("shutdown", { _ = $0.shutdown() }),
            ("slowConsumerCut", { _ = $0.slowConsumerCut() }),
            ("writable", { _ = $0.writable() }),
            ("flushed", { _ = $0.queueFlushed() }),
            ("flushedChoked", { _ = $0.queueFlushed(pipeChoked: true) }),
            ("frameWritten", { _ = $0.closeFrameWritten() }),
            ("frameWrittenChoked", { _ = $0.closeFrameWritten(pipeChoked: true) }),
            ("silence", { _ = $0.heartbeatCheck(at: 100, policy) }),
        ]
        func check(_ sequence: [Int]) {
            var driver = LifecycleDriver(openedAt: 0)
            for index in sequence { inputs[index].1(&driver) }
            _ = driver.socketClosed()
            let coreClosedIt = driver.lifecycle.endKind == .brokerClose || driver.lifecycle.endKind == .shutdown
            let names = sequence.map { inputs[$0].0 }
            #expect(driver.reportedEnds.count + (coreClosedIt ? 1 : 0) == 1, "\(names)")
            #expect(driver.state == .closed, "\(names)")
            #expect(driver.lifecycle.endKind != nil, "\(names)")
        }
        var sequences: [[Int]] = [[]]
        for _ in 1...4 {
            sequences = sequences.flatMap { prefix in inputs.indices.map { prefix + [$0] } }
            sequences.forEach(check)
        }
    }
}
