/// Every op of the protocol (PROTOCOL §3, §4, §6): the `op` member of a request frame, its
/// raw value the name on the wire. The broker decodes it once and dispatches on it; the
/// client library, the CLI and the bench name ops with it; metrics label requests with it.
public enum Op: String, Sendable, CaseIterable {
    // Session (PROTOCOL §3).
    case login, logout, ping, refresh
    // Channel presence (§4).
    case join, leave, publish, setState, removeState, getState, getOnlineUsers, getUserChannels
    // User status (§6).
    case setCustomStatus, getUserStatus, subscribeUserStatus, unsubscribeUserStatus, getSubscriptions
}
