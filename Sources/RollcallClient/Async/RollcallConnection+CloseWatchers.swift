extension RollcallConnection {
    /// Calls `watcher` once when the connection ends (at once when it already has), until
    /// removed with the returned token: an async request's way to learn its reply will never come.
    func addCloseWatcher(_ watcher: @escaping (CloseInfo) -> Void) -> Int {
        cond.lock()
        if let info = finalClose {
            cond.unlock()
            watcher(info)
            return -1
        }
        let token = nextWatcherToken
        nextWatcherToken += 1
        closeWatchers[token] = watcher
        cond.unlock()
        return token
    }

    /// Forgets a watcher (its request was answered).
    func removeCloseWatcher(_ token: Int) {
        cond.withLock { _ = closeWatchers.removeValue(forKey: token) }
    }

    /// Runs and forgets every watcher; called from the close handler.
    func runCloseWatchers(_ info: CloseInfo) {
        let watchers = cond.withLock { () -> [(CloseInfo) -> Void] in
            defer { closeWatchers.removeAll() }
            return Array(closeWatchers.values)
        }
        for watcher in watchers { watcher(info) }
    }
}
