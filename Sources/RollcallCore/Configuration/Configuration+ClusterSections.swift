import RollcallProtocol

extension Configuration {
    /// The sections every node of a cluster must share (PROTOCOL §9).
    public static let sharedClusterSections = ["presence", "state", "userStatus", "limits"]

    /// A shared section as compact JSON with its keys in a fixed order, so that two nodes
    /// compare sections byte for byte; nil for a section that is not shared.
    public func canonicalSection(_ name: String) -> String? {
        let object: JSON
        switch name {
        case "presence":
            object = [
                "maxInstantEvents": .int(presence.maxInstantEvents), "hysteresis": .int(presence.hysteresis),
                "intervalSeconds": .number(JSONNumber(presence.intervalSeconds)),
                "timeoutSeconds": .number(JSONNumber(presence.timeoutSeconds)),
                "snapshotMaxMembers": .int(presence.snapshotMaxMembers),
            ]
        case "state":
            object = [
                "maxKeys": .int(state.maxKeys), "maxKeyBytes": .int(state.maxKeyBytes), "maxValueBytes": .int(state.maxValueBytes),
                "maxTotalBytes": .int(state.maxTotalBytes), "maxPendingChannels": .int(state.maxPendingChannels),
            ]
        case "userStatus":
            object = [
                "customStatusMaxBytes": .int(userStatus.customStatusMaxBytes),
                "customStatusTtlSeconds": .number(JSONNumber(userStatus.customStatusTtlSeconds)),
                "clearCustomStatusOnOffline": .bool(userStatus.clearCustomStatusOnOffline),
                "customStatusPerSecond": .number(JSONNumber(userStatus.customStatusPerSecond)),
                "maxSubscriptionsPerUser": .int(userStatus.maxSubscriptionsPerUser),
                "maxSubscribersPerUser": .int(userStatus.maxSubscribersPerUser),
                "queryRate": ["calls": .int(userStatus.queryRate.calls), "perSeconds": .number(JSONNumber(userStatus.queryRate.perSeconds))],
            ]
        case "limits":
            object = [
                "maxFrameBytes": .int(limits.maxFrameBytes), "maxMessageBytes": .int(limits.maxMessageBytes),
                "maxChannelsPerSession": .int(limits.maxChannelsPerSession), "maxSessionsPerUser": .int(limits.maxSessionsPerUser),
                "maxOutboundBytes": .int(limits.maxOutboundBytes), "maxBatchBytes": .int(limits.maxBatchBytes),
                "loginTimeoutSeconds": .number(JSONNumber(limits.loginTimeoutSeconds)),
                "requestsPerSecond": .number(JSONNumber(limits.requestsPerSecond)), "requestBurst": .int(limits.requestBurst),
                "heldMessageBytes": .int(limits.heldMessageBytes),
            ]
        default:
            return nil
        }
        return object.compactString
    }
}
