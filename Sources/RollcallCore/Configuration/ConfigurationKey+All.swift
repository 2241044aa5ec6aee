extension ConfigurationKey {
    /// Counts and byte sizes: at least 1, at most 2^31 - 1.
    static let counts = 1...2_147_483_647
    /// Durations and windows in seconds: above 0, at most one year.
    static let durations = NumberRange.above(0, upTo: 31_536_000)
    /// Heartbeat durations: libwebsockets keeps idle times in 16-bit seconds.
    static let heartbeat = NumberRange.above(0, upTo: 65_535)
    /// Sustained rates per second.
    static let rates = NumberRange.above(0, upTo: 1_000_000_000)
    /// The `log.level` names, least to most severe.
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
    /// The `log.format` names.
    static let logFormats = ["text", "json"]

    /// Every key of `config.json`, in the order of PROTOCOL §8. `docs/configuration.md`
    /// documents the same table.
    static var all: [ConfigurationKey] {
        [
            .string("listen.host", \.listen.host),
            .integer("listen.port", \.listen.port, 0...65_535),

            .optionalString("tls.certFile", \.tls.certFile),
            .optionalString("tls.keyFile", \.tls.keyFile),

            .choice("auth.mode", \.auth.mode),
            .optionalString("auth.secret", \.auth.secret),
            .optionalString("auth.secretEnv", \.auth.secretEnv),
            .strings("auth.secrets", \.auth.secrets),
            .optionalString("auth.jwksFile", \.auth.jwksFile),
            .optionalString("auth.jwksUrl", \.auth.jwksUrl),
            .optionalString("auth.jwksCaFile", \.auth.jwksCaFile),
            .number("auth.jwksRefreshSeconds", \.auth.jwksRefreshSeconds, .from(1, upTo: 86_400)),
            .boolean("auth.allowInsecure", \.auth.allowInsecure),
            .number("auth.clockSkewSeconds", \.auth.clockSkewSeconds, .from(0, upTo: 3600)),
            .number("auth.refreshNoticeSeconds", \.auth.refreshNoticeSeconds, .from(0, upTo: 86_400)),
            .integer("auth.maxInfoBytes", \.auth.maxInfoBytes, 2...1_048_576),

            .optionalString("http.staticDir", \.http.staticDir),
            .optionalString("http.adminDir", \.http.adminDir),
            .strings("http.allowedOrigins", \.http.allowedOrigins),
            .boolean("http.permessageDeflate", \.http.permessageDeflate),
            .integer("http.permessageDeflateMemLevel", \.http.permessageDeflateMemLevel, 1...9),
            .boolean("http.batchedSends", \.http.batchedSends),
            .number("http.coalesceWindowSeconds", \.http.coalesceWindowSeconds, .from(0, upTo: 0.1)),
            .number("http.coalesceBusySeconds", \.http.coalesceBusySeconds, .above(0, upTo: 1)),

            .number("heartbeat.intervalSeconds", \.heartbeat.intervalSeconds, heartbeat),
            .number("heartbeat.timeoutSeconds", \.heartbeat.timeoutSeconds, heartbeat),

            .integer("presence.maxInstantEvents", \.presence.maxInstantEvents, 1...1_000_000),
            .integer("presence.hysteresis", \.presence.hysteresis, 0...999_999),
            .number("presence.intervalSeconds", \.presence.intervalSeconds, .from(0.1, upTo: durations.upper)),
            .number("presence.timeoutSeconds", \.presence.timeoutSeconds, durations),
            .integer("presence.snapshotMaxMembers", \.presence.snapshotMaxMembers, counts),

            .integer("state.maxKeys", \.state.maxKeys, 1...1024),
            .integer("state.maxKeyBytes", \.state.maxKeyBytes, counts),
            .integer("state.maxValueBytes", \.state.maxValueBytes, counts),
            .integer("state.maxTotalBytes", \.state.maxTotalBytes, counts),
            .integer("state.maxPendingChannels", \.state.maxPendingChannels, counts),

            .integer("userStatus.customStatusMaxBytes", \.userStatus.customStatusMaxBytes, counts),
            .number("userStatus.customStatusTtlSeconds", \.userStatus.customStatusTtlSeconds, durations),
            .boolean("userStatus.clearCustomStatusOnOffline", \.userStatus.clearCustomStatusOnOffline),
            .number("userStatus.customStatusPerSecond", \.userStatus.customStatusPerSecond, rates),
            .integer("userStatus.maxSubscriptionsPerUser", \.userStatus.maxSubscriptionsPerUser, counts),
            .integer("userStatus.maxSubscribersPerUser", \.userStatus.maxSubscribersPerUser, counts),
            .integer("userStatus.queryRate.calls", \.userStatus.queryRate.calls, counts),
            .number("userStatus.queryRate.perSeconds", \.userStatus.queryRate.perSeconds, durations),

            .integer("limits.maxFrameBytes", \.limits.maxFrameBytes, counts),
            .integer("limits.maxMessageBytes", \.limits.maxMessageBytes, counts),
            .integer("limits.maxChannelsPerSession", \.limits.maxChannelsPerSession, counts),
            .integer("limits.maxSessionsPerUser", \.limits.maxSessionsPerUser, counts),
            .integer("limits.maxOutboundBytes", \.limits.maxOutboundBytes, counts),
            .integer("limits.maxBatchBytes", \.limits.maxBatchBytes, counts),
            .number("limits.loginTimeoutSeconds", \.limits.loginTimeoutSeconds, durations),
            .number("limits.requestsPerSecond", \.limits.requestsPerSecond, rates),
            .integer("limits.requestBurst", \.limits.requestBurst, counts),
            .integer("limits.heldMessageBytes", \.limits.heldMessageBytes, 0...2_147_483_647),

            .optionalString("storage.path", \.storage.path),

            .string("log.level", \.log.level, oneOf: logLevels),
            .string("log.format", \.log.format, oneOf: logFormats),

            .optionalString("cluster.redis", \.cluster.redis),
            .string("cluster.keyPrefix", \.cluster.keyPrefix),
            .optionalString("cluster.nodeId", \.cluster.nodeId),
            .number("cluster.heartbeatSeconds", \.cluster.heartbeatSeconds, .from(0.05, upTo: 60)),
            .number("cluster.nodeTimeoutSeconds", \.cluster.nodeTimeoutSeconds, .from(0.2, upTo: 3600)),
            .optionalString("cluster.tls.caFile", \.cluster.tls.caFile),
            .optionalString("cluster.tls.certFile", \.cluster.tls.certFile),
            .optionalString("cluster.tls.keyFile", \.cluster.tls.keyFile),
            .optionalString("cluster.tls.serverName", \.cluster.tls.serverName),
            .strings("api.keys", \.api.keys),
            .optionalString("api.keyEnv", \.api.keyEnv),

            .optionalString("webhooks.url", \.webhooks.url),
            .optionalString("webhooks.secret", \.webhooks.secret),
            .optionalString("webhooks.secretEnv", \.webhooks.secretEnv),
            .strings("webhooks.secrets", \.webhooks.secrets),
            .strings("webhooks.events", \.webhooks.events),
            .integer("webhooks.batchMaxEvents", \.webhooks.batchMaxEvents, 1...10_000),
            .number("webhooks.batchMaxDelaySeconds", \.webhooks.batchMaxDelaySeconds, .from(0, upTo: 3600)),
            .number("webhooks.timeoutSeconds", \.webhooks.timeoutSeconds, .from(0.1, upTo: 3600)),
            .number("webhooks.retryMaxSeconds", \.webhooks.retryMaxSeconds, .from(0, upTo: 604_800)),
            .integer("webhooks.queueMaxEvents", \.webhooks.queueMaxEvents, 1...100_000_000),
            .optionalString("webhooks.caFile", \.webhooks.caFile),
        ]
    }
}
