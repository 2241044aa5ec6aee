import RollcallProtocol

/// User status (PROTOCOL §6) behind one seam: the ops the broker hands to an engine once it
/// has decoded and checked the request. ``UserStatusEngine`` keeps records and subscriptions
/// in this process (durable in SQLite) and completes at once; the Redis engine keeps them
/// in Redis and completes when its script answered. A call that throws has changed nothing
/// and does not complete.
package protocol UserStatuses: AnyObject {
    /// `setCustomStatus`.
    func setCustomStatus(_ request: SetCustomStatusRequest, from session: Session,
                         then done: @escaping EngineCompletion) throws(BrokerError)
    /// `getUserStatus`, rate-limited for other users' records.
    func getUserStatus(_ request: GetUserStatusRequest, from session: Session,
                       then done: @escaping EngineCompletion) throws(BrokerError)
    /// `subscribeUserStatus`.
    func subscribe(_ request: SubscribeUserStatusRequest, from session: Session,
                   then done: @escaping EngineCompletion) throws(BrokerError)
    /// `unsubscribeUserStatus`.
    func unsubscribe(_ request: UnsubscribeUserStatusRequest, from session: Session,
                     then done: @escaping EngineCompletion) throws(BrokerError)
    /// `getSubscriptions`.
    func getSubscriptions(_ request: GetSubscriptionsRequest, from session: Session,
                          then done: @escaping EngineCompletion) throws(BrokerError)
    /// The records of `users`, in order, with no rate limit (the server API's `getUserStatus`);
    /// a user never seen reads `loggedOut`.
    func records(of users: [Name], then done: @escaping (Result<[UserStatusRecord], BrokerError>) -> Void)
    /// A held session resumed on this node (its user is online again, with `customStatus`
    /// when the login set one).
    func sessionResumed(_ session: Session, customStatus: String?)
    /// A session left this node for good (the directory no longer has it); the user's record
    /// follows (one node: at once; a cluster: once the store has the end).
    func sessionEnded(_ session: Session, _ how: SessionEnd)
    /// Subscriptions held now (a cluster: the whole cluster's, as of the last reaper tick).
    var subscriptionCount: Int { get }
}

extension UserStatusEngine: UserStatuses {
    package func setCustomStatus(_ request: SetCustomStatusRequest, from session: Session,
                         then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try setCustomStatus(request, from: session))))
    }

    package func getUserStatus(_ request: GetUserStatusRequest, from session: Session,
                       then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try getUserStatus(request, from: session))))
    }

    package func subscribe(_ request: SubscribeUserStatusRequest, from session: Session,
                   then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try subscribe(request, from: session))))
    }

    package func unsubscribe(_ request: UnsubscribeUserStatusRequest, from session: Session,
                     then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try unsubscribe(request, from: session))))
    }

    package func getSubscriptions(_ request: GetSubscriptionsRequest, from session: Session,
                          then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try getSubscriptions(request, from: session))))
    }

    package func records(of users: [Name], then done: @escaping (Result<[UserStatusRecord], BrokerError>) -> Void) {
        done(.success(users.map(record(of:))))
    }
}
