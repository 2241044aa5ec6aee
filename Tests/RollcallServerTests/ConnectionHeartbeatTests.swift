@testable import RollcallServer
import RollcallCore
import Testing

/// The heartbeat on a manual monotonic clock: a ping every interval, a silence drop at the
/// timeout, anything heard resets the silence.
@Suite("Connection lifecycle: heartbeat")
struct ConnectionHeartbeatTests {
    let policy = HeartbeatPolicy(intervalMs: 1000, timeoutMs: 3000)

    @Test func theFirstCheckIsOneShorterPeriodAfterTheOpening() {
        #expect(ConnectionLifecycle(openedAt: 500).nextHeartbeatCheck(policy) == 1500)
        let shortTimeout = HeartbeatPolicy(intervalMs: 5000, timeoutMs: 2000)
        #expect(ConnectionLifecycle(openedAt: 500).nextHeartbeatCheck(shortTimeout) == 2500)
    }

    @Test func aPingIsDueEveryIntervalAndGoesOutFromTheNextWritableCallback() {
        var driver = LifecycleDriver(openedAt: 0)
        #expect(driver.heartbeatCheck(at: 1000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 2000)])
        #expect(driver.state == .open(pingDue: true))
        #expect(driver.writable() == [.writePing])
        #expect(driver.state == .openIdle)
        #expect(driver.writable() == [])
        driver.heard(at: 1010)  // the pong
        #expect(driver.heartbeatCheck(at: 2000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 3000)])
        #expect(driver.writable() == [.writePing])
    }

    @Test func aSilentConnectionIsDroppedAtTheTimeoutWithoutACloseFrame() {
        var driver = LifecycleDriver(openedAt: 0)
        #expect(driver.heartbeatCheck(at: 1000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 2000)])
        #expect(driver.heartbeatCheck(at: 2000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 3000)])
        #expect(driver.heartbeatCheck(at: 2999, policy) == [.scheduleHeartbeatCheck(at: 3000)])
        #expect(driver.heartbeatCheck(at: 3000, policy) == [
            .discardBuffers, .killNow, .reportEnded(.abnormal(.heartbeatTimeout)),
        ])
        #expect(driver.state == .killed)
        #expect(driver.lifecycle.endKind == .heartbeatTimeout)
        #expect(!driver.lifecycle.acceptsOutput)
        #expect(driver.writableWithEmptyQueue() == [])
        #expect(driver.heartbeatCheck(at: 4000, policy) == [])
        #expect(driver.socketClosed() == [])
        #expect(driver.reportedEnds == [.abnormal(.heartbeatTimeout)])
    }

    @Test func framesAndPongsResetTheSilence() {
        var driver = LifecycleDriver(openedAt: 0)
        _ = driver.heartbeatCheck(at: 1000, policy)
        _ = driver.heartbeatCheck(at: 2000, policy)
        driver.heard(at: 2500)
        #expect(driver.heartbeatCheck(at: 3000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 4000)])
        #expect(driver.heartbeatCheck(at: 4000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 5000)])
        #expect(driver.heartbeatCheck(at: 5000, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 5500)])
        #expect(driver.heartbeatCheck(at: 5500, policy) == [
            .discardBuffers, .killNow, .reportEnded(.abnormal(.heartbeatTimeout)),
        ])
    }

    @Test func aLateCoalescedCheckPingsAndSchedulesFromItsOwnTime() {
        var driver = LifecycleDriver(openedAt: 0)
        #expect(driver.heartbeatCheck(at: 1040, policy) == [.requestWritable, .scheduleHeartbeatCheck(at: 2040)])
        #expect(driver.lifecycle.lastPing == 1040)
    }

    @Test func aCheckBeforeAnythingIsDueOnlyReschedules() {
        var driver = LifecycleDriver(openedAt: 0)
        #expect(driver.heartbeatCheck(at: 400, policy) == [.scheduleHeartbeatCheck(at: 1000)])
        #expect(driver.state == .openIdle)
    }

    @Test func aTimeoutShorterThanTheIntervalDropsBeforeAnyPing() {
        let strict = HeartbeatPolicy(intervalMs: 5000, timeoutMs: 2000)
        var driver = LifecycleDriver(openedAt: 0)
        #expect(driver.heartbeatCheck(at: 2000, strict) == [
            .discardBuffers, .killNow, .reportEnded(.abnormal(.heartbeatTimeout)),
        ])
    }

    @Test func aClosingConnectionIsNotCheckedAgain() {
        var driver = LifecycleDriver(openedAt: 0)
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.heartbeatCheck(at: 10_000, policy) == [])
        var peerClosing = LifecycleDriver(openedAt: 0)
        _ = peerClosing.peerSentClose()
        #expect(peerClosing.heartbeatCheck(at: 10_000, policy) == [])
        #expect(peerClosing.socketClosed() == [.reportEnded(.closeFrame)])
    }

    @Test func aPingDueWhenTheCloseIsDecidedIsNotSent() {
        var driver = LifecycleDriver(openedAt: 0)
        _ = driver.heartbeatCheck(at: 1000, policy)
        _ = driver.coreClosed(.logout, "logout")
        #expect(driver.writableWithEmptyQueue() == [
            .writeCloseFrame(code: 1000, reason: "logout"), .halfCloseAndLinger, .setTimeout(seconds: 2),
        ])
    }

    @Test func thePolicyComesFromSecondsAndIsNeverZero() {
        let fractional = HeartbeatPolicy(intervalSeconds: 0.25, timeoutSeconds: 1.5)
        #expect(fractional == HeartbeatPolicy(intervalMs: 250, timeoutMs: 1500))
        #expect(fractional.slackMs == 25)
        #expect(HeartbeatPolicy(intervalSeconds: 0, timeoutSeconds: 0.0001) == HeartbeatPolicy(intervalMs: 1, timeoutMs: 1))
        #expect(HeartbeatPolicy(intervalSeconds: 25, timeoutSeconds: 60).slackMs == 50)
    }
}
