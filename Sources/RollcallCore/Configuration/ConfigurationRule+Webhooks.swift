import RollcallProtocol

extension ConfigurationRule {
    /// The `webhooks` section's rules (PROTOCOL §11).
    static var webhookRules: [ConfigurationRule] {
        [
            ConfigurationRule(path: "webhooks.url") { configuration, _ in
                guard let url = configuration.webhooks.url else { return nil }
                do throws(WebhookURLError) {
                    _ = try WebhookURL(url)
                    return nil
                } catch {
                    return "\(error.message) (got \(JSON.string(url).compactString))"
                }
            },
            ConfigurationRule(path: "webhooks.secret") { configuration, environment in
                let webhooks = configuration.webhooks
                guard webhooks.isEnabled, webhooks.resolvedSecret(environment: environment) == nil else { return nil }
                guard let name = webhooks.secretEnv else { return "webhooks.url needs webhooks.secret or webhooks.secretEnv" }
                return "webhooks.url needs webhooks.secret or a non-empty environment variable \(name) (webhooks.secretEnv)"
            },
            ConfigurationRule(path: "webhooks.events") { configuration, _ in
                let known = BackendEvent.Kind.allCases.map(\.rawValue)
                guard let unknown = configuration.webhooks.events.first(where: { !known.contains($0) }) else { return nil }
                return "unknown event \(JSON.string(unknown).compactString) (known: \(known.joined(separator: ", ")))"
            },
            ConfigurationRule(path: "webhooks.queueMaxEvents") { configuration, _ in
                let webhooks = configuration.webhooks
                return webhooks.queueMaxEvents >= webhooks.batchMaxEvents ? nil
                    : "must be at least webhooks.batchMaxEvents (\(webhooks.batchMaxEvents))"
            },
        ]
    }
}
