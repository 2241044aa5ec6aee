import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Unblocks SIGINT and SIGTERM on the calling thread (call it first thing on the main
/// thread, so every thread started later inherits the unblocked mask).
///
/// A signal mask survives `exec`: a parent that blocked these signals when it spawned the
/// broker (shells running jobs, test harnesses on libdispatch threads) would otherwise leave
/// a broker that never sees SIGTERM and cannot be stopped gracefully.
func unblockStopSignals() {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
}
