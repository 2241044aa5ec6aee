@testable import RollcallServer
import Testing

/// Which deadline the server's one timer is armed for.
@Suite("DeadlineTimer")
struct DeadlineTimerTests {
    private func target(now: Int64 = 1000, core: Int64? = nil, heartbeat: Int64? = nil, slack: Int64 = 50,
                        drain: Int64? = nil, webhooks: Int64? = nil) -> Int64? {
        DeadlineTimer.target(now: now, coreDeadline: core, heartbeatCheck: heartbeat, heartbeatSlackMs: slack,
                             drainDeadline: drain, webhookDeadline: webhooks)
    }

    @Test func nothingDueArmsNothing() {
        #expect(target() == nil)
    }

    @Test func theEarliestWinsAndHeartbeatChecksWaitForTheirSlack() {
        #expect(target(core: 1200) == 1200)
        #expect(target(heartbeat: 1100) == 1150)
        #expect(target(core: 1120, heartbeat: 1100) == 1120)
        #expect(target(core: 1200, heartbeat: 1100) == 1150)
        #expect(target(core: 1500, drain: 1300) == 1300)
    }

    @Test func shutdownDeadlinesAlreadyPassedDoNotReArmWhileWebhooksAreAwaited() {
        // Draining, the grace period over, webhooks still awaited: wake at their deadline only.
        #expect(target(now: 2000, drain: 1500, webhooks: 5000) == 5000)
        // Draining with no webhooks: the grace deadline, passed or not, ends the wait.
        #expect(target(now: 2000, drain: 1500) == 1500)
        // The webhooks' deadline passed: it no longer arms the timer.
        #expect(target(now: 6000, drain: 1500, webhooks: 5000) == nil)
        #expect(target(now: 1000, drain: 1500, webhooks: 5000) == 1500)
    }

    @Test func anUnattachedTimerArmsNothing() {
        var timer = DeadlineTimer()
        timer.arm(at: 1200, now: 1000)
        #expect(timer.armedAt == nil)
    }
}
