/// Every op of the protocol, decoded once from a request frame's `op` member. ``Broker``
/// dispatch switches over it and hands each engine a typed request.
public enum Op: String, Sendable, CaseIterable {
    // Session (PROTOCOL §3).
    case login, logout, ping, refresh
    // Channel presence (§4).
    case join, leave, publish, setState, removeState, getState, getOnlineUsers, getUserChannels
    // User status (§6).
    case setCustomStatus, getUserStatus, subscribeUserStatus, unsubscribeUserStatus, getSubscriptions
}
