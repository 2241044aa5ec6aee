/// Every logged-in session (live and held), findable by connection, user and resume token.
public final class SessionDirectory {
    private(set) var byConnection: [ConnectionID: Session] = [:]
    /// Most users have one session: it is stored inline, without an array of its own.
    private var byUser: [Name: UserSessions] = [:]
    /// Held sessions only: a token resumes nothing else, and a table of every live session's
    /// token cost ~54 B per session (idle benchmark, heaptrack).
    private var heldByResumeToken: [ResumeToken: Session] = [:]
    /// Cluster mode only: sessions by their public id (control messages name them so).
    private var byId: [String: Session] = [:]
    /// True when sessions are indexed by id (cluster mode).
    package var indexesIds = false

    init() {}

    /// The user's sessions, oldest first (live and held).
    public func sessions(of user: Name) -> [Session] { byUser[user]?.list ?? [] }

    /// The session a connection carries.
    public func session(on connection: ConnectionID) -> Session? { byConnection[connection] }

    /// The session with this public id (cluster mode).
    package func session(id: String) -> Session? { byId[id] }

    /// The held session this token resumes.
    func heldSession(resumeToken: String) -> Session? {
        guard let token = ResumeToken(resumeToken), let session = heldByResumeToken[token], session.isHeld else { return nil }
        return session
    }

    /// Number of live (connected) sessions.
    package var liveCount: Int { byConnection.count }

    /// Number of users with at least one session.
    package var userCount: Int { byUser.count }

    /// Every session, live and held.
    public var all: [Session] { byUser.values.flatMap(\.list) }

    package func add(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = session }
        if let existing = byUser[session.userId] {
            byUser[session.userId] = .many(existing.list + [session])
        } else {
            byUser[session.userId] = .one(session)
        }
        if session.isHeld { heldByResumeToken[session.token] = session }
        if indexesIds { byId[session.sessionId] = session }
    }

    func detach(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = nil }
        session.connection = nil
        heldByResumeToken[session.token] = session
    }

    func attach(_ session: Session, to connection: ConnectionID, newToken: ResumeToken) {
        heldByResumeToken[session.token] = nil
        session.token = newToken
        session.connection = connection
        session.heldSince = nil
        byConnection[connection] = session
    }

    func remove(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = nil }
        if indexesIds { byId[session.sessionId] = nil }
        heldByResumeToken[session.token] = nil
        guard let existing = byUser[session.userId] else { return }
        let rest = existing.list.filter { $0 !== session }
        switch rest.count {
        case 0: byUser[session.userId] = nil
        case 1: byUser[session.userId] = .one(rest[0])
        default: byUser[session.userId] = .many(rest)
        }
    }
}

/// One user's sessions, oldest first: a single session inline, or an array.
private enum UserSessions {
    case one(Session)
    case many([Session])

    var list: [Session] {
        switch self {
        case .one(let session): return [session]
        case .many(let sessions): return sessions
        }
    }
}
