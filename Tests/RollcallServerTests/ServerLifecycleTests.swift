@testable import RollcallServer
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The part of the server other threads touch: starting the service thread once, stop
/// requests, and what `start()` waits for. No lws context: the closures stand in for it.
@Suite("ServerLifecycle", .timeLimit(.minutes(1)))
struct ServerLifecycleTests {
    @Test func theServiceThreadStartsOnceServesAndIsWaitedFor() throws {
        let lifecycle = ServerLifecycle()
        let served = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let names = Names()
        let port = try lifecycle.startServiceThread(
            prepare: {}, create: { (.success(4242), nil) },
            serve: {
                names.thread = pthread_self()
                // The calling thread's name as the system shows it (`top -H`, `ps -L`).
                names.serving = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .newlines)
                served.signal()
                release.wait()
            })
        #expect(port == 4242)
        served.wait()
        #expect(names.thread.map { pthread_equal($0, pthread_self()) == 0 } == true)  // a thread of its own
        #expect(names.serving == ServerLifecycle.threadName, "the name the system shows")
        #expect(throws: ServerError.self) {
            try lifecycle.startServiceThread(prepare: {}, create: { (.success(1), nil) }, serve: {})
        }
        release.signal()
        lifecycle.wait()
        lifecycle.wait()  // returns again once the thread is over
    }

    @Test func aSecondStartIsRefusedWithItsCode() throws {
        let lifecycle = ServerLifecycle()
        _ = try lifecycle.startServiceThread(prepare: {}, create: { (.success(1), nil) }, serve: {})
        do {
            _ = try lifecycle.startServiceThread(prepare: {}, create: { (.success(2), nil) }, serve: {})
            Issue.record("a second start succeeded")
        } catch {
            #expect(error.code == .alreadyStarted)
        }
        lifecycle.wait()
    }

    @Test func aFailedCreateIsThrownAndNothingServes() {
        let lifecycle = ServerLifecycle()
        let serves = Names()
        do {
            _ = try lifecycle.startServiceThread(
                prepare: {}, create: { (.failure(ServerError(.listenFailed, "no port")), nil) },
                serve: { serves.serving = "served" })
            Issue.record("the start succeeded")
        } catch {
            #expect(error.code == .listenFailed)
        }
        lifecycle.wait()
        #expect(serves.serving == nil)
    }

    @Test func aFailedPrepareStartsNoThread() {
        let lifecycle = ServerLifecycle()
        let created = Names()
        do {
            _ = try lifecycle.startServiceThread(
                prepare: { () throws(ServerError) in throw ServerError(.tlsFileInvalid, "bad file") },
                create: { created.serving = "created"; return (.success(1), nil) }, serve: {})
            Issue.record("the start succeeded")
        } catch {
            #expect(error.code == .tlsFileInvalid)
        }
        #expect(created.serving == nil)
    }

    @Test func aStopRequestSetsTheFlagTheLoopReads() {
        let lifecycle = ServerLifecycle()
        #expect(!lifecycle.stopRequested)
        lifecycle.requestStop()
        #expect(lifecycle.stopRequested)
    }

    @Test func theClusterLinkIsWaitedForAtMostTheBoundAndSignalledOnce() {
        let lifecycle = ServerLifecycle()
        #expect(!lifecycle.waitForClusterLink(seconds: 0.01))
        lifecycle.clusterLinkConnected()
        lifecycle.clusterLinkConnected()  // every loop turn while connected: only the first counts
        #expect(lifecycle.waitForClusterLink(seconds: 5))
        #expect(!lifecycle.waitForClusterLink(seconds: 0.01))
    }

    @Test func theFirstKeySetFetchHandsItsErrorToStart() {
        let lifecycle = ServerLifecycle()
        lifecycle.keySetFetched(ServerError(.keySetUnavailable, "auth.jwksUrl: 404"))
        #expect(lifecycle.waitForKeySet()?.code == .keySetUnavailable)
        let fine = ServerLifecycle()
        DispatchQueue.global().async { fine.keySetFetched(nil) }
        #expect(fine.waitForKeySet() == nil)
    }

    /// What a closure on the service thread saw (read after a semaphore ordered it).
    private final class Names: @unchecked Sendable {
        var serving: String?
        var thread: pthread_t?
    }
}
