/// Every logged-in session (live and held), findable by connection, user and resume token.
public final class SessionDirectory {
    private(set) var byConnection: [ConnectionID: Session] = [:]
    private(set) var byUser: [Name: [Session]] = [:]
    private var byResumeToken: [String: Session] = [:]

    init() {}

    /// The user's sessions, oldest first (live and held).
    public func sessions(of user: Name) -> [Session] { byUser[user] ?? [] }

    /// The session a connection carries.
    public func session(on connection: ConnectionID) -> Session? { byConnection[connection] }

    /// The held session this token resumes.
    func heldSession(resumeToken: String) -> Session? {
        guard let session = byResumeToken[resumeToken], session.isHeld else { return nil }
        return session
    }

    /// Number of live (connected) sessions.
    public var liveCount: Int { byConnection.count }

    /// Number of users with at least one session.
    public var userCount: Int { byUser.count }

    /// Every session, live and held.
    public var all: [Session] { byUser.values.flatMap { $0 } }

    func add(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = session }
        byUser[session.userId, default: []].append(session)
        byResumeToken[session.resumeToken] = session
    }

    func detach(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = nil }
        session.connection = nil
    }

    func attach(_ session: Session, to connection: ConnectionID, newResumeToken: String) {
        byResumeToken[session.resumeToken] = nil
        session.resumeToken = newResumeToken
        byResumeToken[newResumeToken] = session
        session.connection = connection
        session.heldSince = nil
        byConnection[connection] = session
    }

    func remove(_ session: Session) {
        if let connection = session.connection { byConnection[connection] = nil }
        byResumeToken[session.resumeToken] = nil
        if var list = byUser[session.userId] {
            list.removeAll { $0 === session }
            byUser[session.userId] = list.isEmpty ? nil : list
        }
    }
}
