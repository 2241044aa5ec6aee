import RollcallProtocol

/// Sessions (PROTOCOL §3 and §9) behind one seam, and the life of the node that holds them.
///
/// ``LocalSessions`` keeps sessions in this process and completes at once. The Redis engine
/// records each session in Redis, so `maxSessionsPerUser` holds across nodes and a held
/// session resumes on any node; it completes when its script answered. The broker checks a
/// login (its token and custom status) before it calls the engine, and keeps the connection,
/// its rate limits and its timers itself.
package protocol SessionEngine: AnyObject {
    // MARK: Sessions

    /// `login`: resumes the held session `request.resumeToken` names when it is the user's,
    /// else starts a new one (the user's oldest sessions over `maxSessionsPerUser` end with
    /// 4409, on whichever node). `done` gets the login's result and the logged-in session.
    func login(_ request: LoginRequest, grant: Grant, on connection: ConnectionID,
               then done: @escaping (Result<JSON, BrokerError>, Session?) -> Void)
    /// After a login's reply went out: what follows it (a resumed session's snapshots and
    /// kept messages, the user-status catch-up). `finished` runs once the requests that
    /// waited behind the login may go on.
    func loggedIn(_ session: Session, then finished: @escaping () -> Void)
    /// A session resumed on this connection: the channels its login result lists. The
    /// messages kept while it was held (`kept`) follow the reply, after its snapshots.
    func resumed(_ session: Session, kept: [[UInt8]]) -> [JSON]
    /// `logout`: the session ends; `done` runs once the end is recorded (the reply and close
    /// 1000 wait for it, so the client's next step anywhere comes after this end).
    func logout(_ session: Session, then done: @escaping () -> Void)
    /// An abnormal drop: the session is held, resumable.
    func held(_ session: Session)
    /// A session ends for good: its channels (leave or timeout events), before its user's
    /// status follows. `recorded` runs once the store has the end (not called when nothing
    /// waits for a store).
    func ended(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)?)

    // MARK: Server API

    /// `disconnectUser`: every session of the user, on every node, ends as by `logout`.
    func disconnectUser(_ request: DisconnectUserRequest, then done: @escaping (Result<JSON, BrokerError>) -> Void)
    /// `getInfo`: the nodes with their sessions, and the totals.
    func info(then done: @escaping (Result<JSON, BrokerError>) -> Void)

    // MARK: The node's life

    /// The earliest moment the engine has something due (monotonic ms), if any.
    var nextDeadline: Timestamp? { get }
    /// Runs what is due (``nextDeadline``).
    func fireDueTimers()
    /// A message arrived on a store channel the engine listens to.
    func storeMessageArrived(channel: [UInt8], payload: [UInt8])
    /// The store's pub/sub link came back: channels are resynced.
    func storeResubscribed()
    /// The store confirmed the subscription of these pub/sub channels.
    func storeListening(_ channels: [[UInt8]])
    /// A heartbeat of this node found it live.
    func storeBeat(_ beat: StoreBeat)
    /// The store lost the cluster's data: every session here ends without a word.
    func storeLostData()
    /// The other nodes declared this node dead: its sessions are theirs to resume.
    func nodeFenced()
    /// The broker shuts down; every session already ended with ``SessionEnd/shutdown``.
    func shutDown()
}

/// The engines a broker runs on: one for channel presence, one for user status, one for
/// sessions. ``BrokerEngines/inMemory(_:)`` on one node; the Redis engine in a cluster.
package struct BrokerEngines {
    /// Channel presence.
    package var presence: any ChannelPresence
    /// User status and subscriptions.
    package var userStatuses: any UserStatuses
    /// Sessions, and the node's life.
    package var sessions: any SessionEngine

    /// The engines for `broker`, as a factory makes them.
    package init(presence: any ChannelPresence, userStatuses: any UserStatuses, sessions: any SessionEngine) {
        self.presence = presence
        self.userStatuses = userStatuses
        self.sessions = sessions
    }

    /// The in-memory engines: everything in this process (one node).
    package static func inMemory(_ broker: Broker) -> BrokerEngines {
        BrokerEngines(presence: broker.presence, userStatuses: broker.userStatus, sessions: LocalSessions(broker: broker))
    }
}

/// Makes a broker's engines once the broker exists: the Redis engine calls the store through
/// it (``StoreCaller``).
package typealias EngineFactory = (Broker) -> BrokerEngines
