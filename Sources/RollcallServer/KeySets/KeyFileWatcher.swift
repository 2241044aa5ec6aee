#if canImport(Glibc)
import Glibc
#endif
import RollcallCore

/// `auth.jwksFile` (PROTOCOL §3, 1.2): read at start, then polled every second, and read again
/// when its identity, size or times change (an edit in place, or a new file renamed over it as
/// Kubernetes does with a mounted ConfigMap), so a change is in force within 5 s. Reading a
/// small local file costs the service thread microseconds; the poll itself is one `stat`.
struct KeyFileWatcher {
    /// How often the file is looked at.
    static let pollIntervalMs: Int64 = 1000
    /// The largest key set file read (a JWK Set is a few kilobytes).
    static let maximumBytes = 1 << 20

    /// The file, as configured.
    let path: String
    /// Its stamp when it was last read (nil: it could not be looked at then).
    private(set) var lastStamp: FileStamp?
    /// What it has done, for `/metrics` and the log.
    var tracker: KeySetTracker

    /// Reads the file at start. Throws, naming `auth.jwksFile` and the path, when it cannot be
    /// read or does not hold a key set with a usable key: the broker does not start then.
    static func start(path: String) throws(ServerError) -> (watcher: KeyFileWatcher, set: JWKSet) {
        var watcher = KeyFileWatcher(path: path, tracker: KeySetTracker(source: .file, location: path))
        watcher.lastStamp = FileStamp(path: path)
        let outcome: KeySetTracker.Outcome
        switch read(path) {
        case .success(let bytes): outcome = watcher.tracker.received(bytes)
        case .failure(let problem): outcome = .keep(watcher.tracker.failed(problem.reason))
        }
        switch outcome {
        case .use(let set, _): return (watcher, set)
        case .keep(let message): throw ServerError(.keySetUnavailable, message)
        }
    }

    private init(path: String, tracker: KeySetTracker) {
        self.path = path
        self.tracker = tracker
    }

    /// One poll: nil while the file is unchanged, else what reading it again gave.
    mutating func poll() -> KeySetTracker.Outcome? {
        let stamp = FileStamp(path: path)
        let statError = errno
        guard stamp != lastStamp else { return nil }
        lastStamp = stamp
        guard stamp != nil else { return .keep(tracker.failed("cannot be looked at (\(String(cString: strerror(statError))))")) }
        switch Self.read(path) {
        case .success(let bytes): return tracker.received(bytes)
        case .failure(let problem): return .keep(tracker.failed(problem.reason))
        }
    }

    /// Why a key set file cannot be read, in words.
    struct ReadProblem: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The file's bytes, or why they cannot be read.
    static func read(_ path: String) -> Result<[UInt8], ReadProblem> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(ReadProblem("cannot be opened (\(String(cString: strerror(errno))))")) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadProblem("cannot be read (\(String(cString: strerror(errno))))"))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[..<count]
            guard bytes.count <= maximumBytes else { return .failure(ReadProblem("is larger than \(maximumBytes) bytes")) }
        }
    }
}

/// What `stat` says about a file that tells one version from the next: device and inode (a
/// file renamed over it), size, and modification and change times to the nanosecond.
struct FileStamp: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    let changed: timespec

    /// The stamp of `path` (symbolic links followed), or nil when it cannot be looked at
    /// (`errno` says why).
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (lhs: FileStamp, rhs: FileStamp) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size
            && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
            && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
    }
}
