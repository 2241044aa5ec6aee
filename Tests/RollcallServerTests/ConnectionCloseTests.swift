@testable import RollcallServer
import RollcallCore
import RollcallProtocol
import Testing

/// Every way a connection closes, step by step, with the exact actions and one `.ended`.
@Suite("Connection lifecycle: close paths")
struct ConnectionCloseTests {
    static let linger: [ConnectionAction] = [.halfCloseAndLinger, .setTimeout(seconds: 2)]

    @Test func aNewConnectionIsOpenReadingAndAcceptingOutput() {
        let lifecycle = ConnectionLifecycle(openedAt: 5)
        #expect(lifecycle.state == .openIdle)
        #expect(lifecycle.isReading)
        #expect(lifecycle.acceptsOutput)
        #expect(!lifecycle.hasCloseToSend)
        #expect(lifecycle.endKind == nil)
    }

    @Test func clientCloseFrameIsReportedAsCloseFrameWhenLwsCloses() {
        var driver = LifecycleDriver()
        #expect(driver.peerSentClose() == [])
        #expect(driver.state == .peerClosing)
        #expect(!driver.lifecycle.isReading)
        #expect(!driver.lifecycle.acceptsOutput)
        #expect(driver.writableWithEmptyQueue() == [])
        #expect(driver.socketClosed() == [.reportEnded(.closeFrame)])
        #expect(driver.state == .closed)
        #expect(driver.lifecycle.endKind == .closeFrame)
        #expect(driver.reportedEnds == [.closeFrame])
    }

    @Test func aDropWithoutCloseFrameIsReportedAbnormalOnce() {
        var driver = LifecycleDriver()
        #expect(driver.socketClosed() == [.reportEnded(.abnormal(.dropped))])
        #expect(driver.lifecycle.endKind == .dropped)
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [.abnormal(.dropped)])
    }

    @Test func aFailedDirectWriteDropsTheConnectionAndReportsItOnceAtClosed() {
        var driver = LifecycleDriver()
        #expect(driver.writeFailed() == [.discardBuffers, .killNow])
        #expect(driver.state == .killed)
        #expect(!driver.lifecycle.acceptsOutput && !driver.lifecycle.isReading)
        #expect(driver.lifecycle.endKind == nil)
        #expect(driver.writeFailed() == [])
        #expect(driver.coreClosed(.logout, "logout") == [])
        #expect(driver.writableWithEmptyQueue() == [])
        #expect(driver.socketClosed() == [.reportEnded(.abnormal(.dropped))])
        #expect(driver.reportedEnds == [.abnormal(.dropped)])
    }

    @Test func aWriteFailureWhileClosingChangesNothing() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.writeFailed() == [])
        #expect(driver.state == .flushing(.init(code: 1000, reason: "logout")))
    }

    @Test func brokerCloseFlushesThenSendsTheFrameThenLingersUntilThePeerAnswers() {
        var driver = LifecycleDriver()
        #expect(driver.coreClosed(.unauthorized, "token expired") == [.setTimeout(seconds: 10), .requestWritable])
        #expect(driver.state == .flushing(.init(code: 4401, reason: "token expired")))
        #expect(driver.lifecycle.hasCloseToSend)
        #expect(!driver.lifecycle.acceptsOutput)
        #expect(driver.writable() == [])
        #expect(driver.queueFlushed() == [.writeCloseFrame(code: 4401, reason: "token expired")])
        #expect(driver.state == .closeFrameSent)
        #expect(driver.closeFrameWritten() == Self.linger)
        #expect(driver.state == .lingering)
        #expect(driver.writableWithEmptyQueue() == [])
        #expect(driver.peerSentClose() == [.hangUp])
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .brokerClose)
        #expect(driver.reportedEnds == [])
    }

    @Test func logoutClosesWith1000AsABrokerClose() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.writableWithEmptyQueue() == [.writeCloseFrame(code: 1000, reason: "logout")] + Self.linger)
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .brokerClose)
        #expect(driver.reportedEnds == [])
    }

    @Test(arguments: [CloseCode.binaryFrame, .invalidUTF8, .frameTooBig])
    func protocolFaultEndsTheSessionAtOnceLikeAClientCloseFrame(code: CloseCode) {
        var driver = LifecycleDriver()
        #expect(driver.protocolFault(code, "bad input") == [
            .discardBuffers, .setTimeout(seconds: 10), .requestWritable, .reportEnded(.closeFrame),
        ])
        #expect(!driver.lifecycle.isReading)
        #expect(driver.lifecycle.endKind == .protocolFault)
        #expect(driver.writableWithEmptyQueue() == [.writeCloseFrame(code: code.rawValue, reason: "bad input")] + Self.linger)
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .protocolFault)
        #expect(driver.reportedEnds == [.closeFrame])
    }

    @Test func shutdownClosesWith1001() {
        var driver = LifecycleDriver()
        #expect(driver.shutdown() == [.setTimeout(seconds: 10), .requestWritable])
        #expect(driver.lifecycle.endKind == .shutdown)
        #expect(driver.writableWithEmptyQueue() == [.writeCloseFrame(code: 1001, reason: "shutdown")] + Self.linger)
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [])
    }

    @Test func theCoresOwn1001CountsAsShutdownAndTheBrokersShutdownPassAddsNothing() {
        var driver = LifecycleDriver()
        #expect(driver.coreClosed(.shutdown, "broker shutting down") == [.setTimeout(seconds: 10), .requestWritable])
        #expect(driver.lifecycle.endKind == .shutdown)
        #expect(driver.shutdown() == [])
        #expect(driver.state == .flushing(.init(code: 1001, reason: "broker shutting down")))
    }

    @Test func slowConsumerCutDropsTheQueueReportsAbnormalAndSends1013() {
        var driver = LifecycleDriver()
        #expect(driver.slowConsumerCut() == [
            .discardBuffers, .setTimeout(seconds: 10), .requestWritable, .reportEnded(.abnormal(.slowConsumer)),
        ])
        #expect(!driver.lifecycle.acceptsOutput)
        #expect(driver.lifecycle.endKind == .slowConsumer)
        #expect(driver.writableWithEmptyQueue() == [.writeCloseFrame(code: 1013, reason: "slow consumer")] + Self.linger)
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [.abnormal(.slowConsumer)])
    }

    @Test func aChokedPipeDelaysTheCloseFrameAndTheLingerToLaterWritableCallbacks() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.sessionLimit, "session limit")
        #expect(driver.queueFlushed(pipeChoked: true) == [.requestWritable])
        #expect(driver.lifecycle.hasCloseToSend)
        #expect(driver.queueFlushed(pipeChoked: false) == [.writeCloseFrame(code: 4409, reason: "session limit")])
        #expect(driver.closeFrameWritten(pipeChoked: true) == [.requestWritable])
        #expect(driver.state == .closeFrameSent)
        // lws raises the writable callback once it flushed the rest of our close frame.
        #expect(driver.writable() == Self.linger)
        #expect(driver.state == .lingering)
        #expect(driver.writable() == [])
    }

    @Test func thePipeIsOnlyTestedWhenACloseFrameWaits() {
        var lifecycle = ConnectionLifecycle(openedAt: 0)
        var tests = 0
        func choked() -> Bool { tests += 1; return false }
        #expect(Array(lifecycle.queueFlushed(pipeChoked: choked())) == [])
        #expect(tests == 0)
        _ = lifecycle.coreClosed(.logout, reason: "logout")
        _ = lifecycle.queueFlushed(pipeChoked: choked())
        #expect(tests == 1)
    }

    @Test func lingerTimeoutEndsTheConnectionWithoutASecondReport() {
        var driver = LifecycleDriver()
        _ = driver.slowConsumerCut()
        _ = driver.writableWithEmptyQueue()
        #expect(driver.state == .lingering)
        // lws' linger timeout frees the connection: it arrives as CLOSED.
        #expect(driver.socketClosed() == [])
        #expect(driver.lifecycle.endKind == .slowConsumer)
        #expect(driver.peerSentClose() == [])
        #expect(driver.reportedEnds == [.abnormal(.slowConsumer)])
    }

    @Test func nothingIsReadButThePeerIsStillHeardWhileLingering() {
        var driver = LifecycleDriver(openedAt: 0)
        _ = driver.coreClosed(.logout, "logout")
        _ = driver.writableWithEmptyQueue()
        driver.heard(at: 700)
        #expect(!driver.lifecycle.isReading)
        #expect(driver.lifecycle.lastHeard == 700)
    }

    @Test func aSecondCloseDecisionChangesNothing() {
        var driver = LifecycleDriver()
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.coreClosed(.unauthorized, "again") == [])
        #expect(driver.shutdown() == [])
        #expect(driver.protocolFault(.binaryFrame) == [])
        #expect(driver.slowConsumerCut() == [])
        #expect(driver.state == .flushing(.init(code: 1000, reason: "logout")))
        #expect(driver.lifecycle.endKind == .brokerClose)
    }
}
