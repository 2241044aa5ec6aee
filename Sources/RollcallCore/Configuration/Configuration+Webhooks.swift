extension Configuration {
    /// Webhooks (PROTOCOL §11, 1.1): batches of presence, channel and user-status events
    /// POSTed to the application's backend. Off while ``url`` is nil.
    public struct Webhooks: Sendable, Equatable {
        /// `http://` or `https://` URL the batches are POSTed to; nil turns webhooks off. Default nil.
        public var url: String? = nil
        /// HMAC-SHA256 key of the `Rollcall-Signature` header. Default nil.
        public var secret: String? = nil
        /// Environment variable holding the secret when `secret` is nil. Default `ROLLCALL_WEBHOOK_SECRET`.
        public var secretEnv: String? = "ROLLCALL_WEBHOOK_SECRET"
        /// *(1.2)* More secrets: every batch is signed with the secret and with each of these
        /// (one `v1=` each), so a receiver's secret can be rotated without refusing a batch.
        /// Default `[]`.
        public var secrets: [String] = []
        /// Which kinds of event are sent: `presence`, `channel`, `userStatus`. Default all three.
        public var events: [String] = BackendEvent.Kind.allCases.map(\.rawValue)
        /// Events per batch at most. Default 100.
        public var batchMaxEvents = 100
        /// Seconds the oldest event of a batch may wait before the batch goes out. Default 0.5.
        public var batchMaxDelaySeconds = 0.5
        /// Seconds a delivery may take before it counts as failed. Default 5.
        public var timeoutSeconds = 5.0
        /// Seconds a batch is retried for before it is dropped (0: never retried). Default 300.
        public var retryMaxSeconds = 300.0
        /// Events waiting at most; beyond it the oldest are dropped. Default 100000.
        public var queueMaxEvents = 100_000
        /// PEM file of the certificate authorities trusted for an `https` url, instead of the
        /// system's trust store (a private CA, or a test's self-signed certificate). Default nil.
        /// An addition to PROTOCOL §8 (see `docs/webhooks.md`).
        public var caFile: String? = nil
        public init() {}

        /// True when a url is set.
        public var isEnabled: Bool { url != nil }

        /// The kinds named in ``events`` (unknown names are left out; validation refuses them).
        public var eventKinds: Set<BackendEvent.Kind> { Set(events.compactMap(BackendEvent.Kind.init(rawValue:))) }

        /// Every signing secret, in signing order: the resolved one, then ``secrets``; empty
        /// when there is no resolved secret (validation refuses that while a url is set).
        public func signingSecrets(environment: [String: String]) -> [String] {
            guard let first = resolvedSecret(environment: environment) else { return [] }
            return [first] + secrets
        }

        /// The signing secret: ``secret``, else the non-empty variable named by ``secretEnv``.
        public func resolvedSecret(environment: [String: String]) -> String? {
            if let secret { return secret }
            guard let name = secretEnv, let value = environment[name], !value.isEmpty else { return nil }
            return value
        }
    }
}
