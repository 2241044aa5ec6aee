import RollcallCore

/// One key set source (`auth.jwksFile` or `auth.jwksUrl`) as the transport sees it: whether
/// a document it read replaces the broker's keys of that source, and what `/metrics` and the
/// log say about it. Pure; ``KeyFileWatcher`` and ``JWKSFetcher`` do the reading.
///
/// A document that does not parse, or holds no usable key, keeps the keys in force (PROTOCOL
/// §3): it counts as a failure, like a file that cannot be read or a fetch that fails.
struct KeySetTracker {
    /// Which source.
    let source: JWKSetSource
    /// The path or the URL, for messages.
    let location: String
    /// Documents that replaced the keys (the first load included).
    private(set) var refreshes = 0
    /// Reads, fetches or documents that failed (the keys in force stayed).
    private(set) var failures = 0
    /// Usable keys of the set in force (0 before the first load).
    private(set) var usableKeys = 0
    /// The document of the set in force, so that only a change is logged at info.
    private var inForce: [UInt8]?

    init(source: JWKSetSource, location: String) {
        self.source = source
        self.location = location
    }

    /// What became of one document.
    enum Outcome {
        /// It parsed: the broker takes `set` for this source. `changed` is false when the
        /// document is the one in force, byte for byte (nothing worth an info line).
        case use(JWKSet, changed: Bool)
        /// The keys in force stay; the message says why (for a warning).
        case keep(String)
    }

    /// `bytes` were read or fetched.
    mutating func received(_ bytes: [UInt8]) -> Outcome {
        do throws(JWKSetError) {
            let set = try JWKSet.parse(bytes)
            let changed = bytes != inForce
            inForce = bytes
            usableKeys = set.usableKeys.count
            refreshes += 1
            return .use(set, changed: changed)
        } catch {
            return .keep(failed(error.message))
        }
    }

    /// The source could not be read or fetched (`reason`), or its document was refused.
    /// Returns the log message, which says the keys in force stay.
    mutating func failed(_ reason: String) -> String {
        failures += 1
        let kept = usableKeys == 0 ? "no keys of it are in force" : "the \(usableKeys) keys in force stay"
        return "\(source.configurationKey) \(location): \(reason); \(kept)"
    }

    /// The log line of a set that was taken: its usable keys' `kid`s, then each unusable key
    /// and why (the set's other keys still work).
    func describe(_ set: JWKSet) -> String {
        var text = "\(source.configurationKey) \(location): \(set.usableKeys.count) usable keys (kid \(set.usableKids.joined(separator: ", ")))"
        if !set.problems.isEmpty { text += "; left out: " + set.problems.joined(separator: "; ") }
        return text
    }
}
