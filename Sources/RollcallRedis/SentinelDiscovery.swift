/// How a node finds the master behind Sentinel, as plain values (no sockets, no clock; the
/// owner, ``RedisLocator``, carries out each ``Step``):
///
/// - a round asks the sentinels in turn, starting with the one that last named a master, with
///   `SENTINEL get-master-addr-by-name <masterName>`;
/// - the first that answers with an address ends the round: ``Step/found(_:)``;
/// - one that is unreachable, too slow, answers an error or does not know the name
///   (a null reply) passes the turn to the next; when every sentinel had its turn the round
///   fails (``Step/failed(_:)``, ``RedisError/Code/masterNotFound``) and the link backs off;
/// - when the address found is not the master (`ROLE`, `READONLY`: ``notMaster()``), the next
///   round starts with the following sentinel, so a sentinel with a stale view is not asked first
///   again and again.
struct SentinelDiscovery {
    /// What the owner does next.
    enum Step: Equatable {
        /// Ask sentinel `index` (of the URL's list) for the master's address.
        case ask(sentinel: Int)
        /// The round named the master at this address (as the sentinel announced it: an address
        /// or a name to resolve).
        case found(RedisHostPort)
        /// No sentinel named a master this round.
        case failed(RedisError)
    }

    /// The master's name.
    let masterName: String
    /// How many sentinels there are.
    let sentinelCount: Int
    /// The sentinel a round asks first.
    private(set) var preferred = 0
    /// The sentinel being asked, nil between rounds.
    private(set) var asking: Int?
    private var askedThisRound = 0
    private var reasons: [String] = []

    /// A discovery of `masterName` over `sentinelCount` sentinels (at least one).
    init(masterName: String, sentinelCount: Int) {
        precondition(sentinelCount > 0, "a sentinel set has at least one sentinel")
        self.masterName = masterName
        self.sentinelCount = sentinelCount
    }

    /// Starts a round (a round under way starts over).
    mutating func start() -> Step {
        askedThisRound = 1
        reasons = []
        asking = preferred
        return .ask(sentinel: preferred)
    }

    /// The sentinel being asked answered `reply`.
    mutating func answered(_ reply: RedisReply) -> Step {
        guard let index = asking else { return .failed(RedisError(.masterNotFound, "no discovery under way")) }
        switch reply {
        case .array(let elements) where elements.count == 2:
            if let host = elements[0].text, !host.isEmpty,
               let portText = elements[1].text, let port = Int(portText), (1...65535).contains(port) {
                asking = nil
                preferred = index
                return .found(RedisHostPort(host: host, port: port))
            }
            return next(after: index, because: "an address that is not host and port")
        case .null:
            return next(after: index, because: "does not know the master \(masterName)")
        case .error(let line):
            return next(after: index, because: line)
        default:
            return next(after: index, because: "an unexpected answer")
        }
    }

    /// Asking the sentinel failed (unreachable, no answer in time, an error reply).
    mutating func failed(_ error: RedisError) -> Step {
        guard let index = asking else { return .failed(RedisError(.masterNotFound, "no discovery under way")) }
        return next(after: index, because: error.code == .errorReply ? error.message : error.code.rawValue)
    }

    /// The address a round found did not answer as master: the next round asks the following
    /// sentinel first.
    mutating func notMaster() {
        preferred = (preferred + 1) % sentinelCount
    }

    private mutating func next(after index: Int, because reason: String) -> Step {
        reasons.append("sentinel \(index + 1): \(reason)")
        guard askedThisRound < sentinelCount else {
            asking = nil
            return .failed(RedisError(.masterNotFound, "no sentinel named the master \(masterName) (\(reasons.joined(separator: "; ")))"))
        }
        askedThisRound += 1
        let following = (index + 1) % sentinelCount
        asking = following
        return .ask(sentinel: following)
    }
}
