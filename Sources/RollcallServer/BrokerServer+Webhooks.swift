import Foundation
import RollcallCore
import RollcallRedisEngine
import RollcallStorage

/// Webhooks (PROTOCOL §11): the sender lives on the service thread beside the connections;
/// the core's ``Action/notifyBackend(_:)`` feeds it (see `BrokerServer+Actions.swift`).
extension BrokerServer {
    /// The sender for `webhooks.url`, or nil while it is null. Service thread, once the context exists.
    func makeWebhookSender(context: OpaquePointer) throws(ServerError) -> WebhookSender? {
        let webhooks = configuration.webhooks
        guard let text = webhooks.url else { return nil }
        let url: WebhookURL
        do throws(WebhookURLError) {
            url = try WebhookURL(text)
        } catch {
            throw ServerError(.webhookSetupFailed, "webhooks.url: \(error.message)")
        }
        let secrets = webhooks.signingSecrets(environment: services.environment)
        guard !secrets.isEmpty else {
            throw ServerError(.webhookSetupFailed, "webhooks.url needs webhooks.secret or the environment variable named by webhooks.secretEnv")
        }
        var settings = WebhookSender.Settings(webhooks: webhooks, url: url, secrets: secrets, node: nodeId)
        if let link = services.clusterLink {
            settings.storage = .stream(WebhookStream(link: link, webhooks: webhooks))
        } else if let path = configuration.storage.path {
            do throws(StatusStoreError) {
                settings.storage = .journal(try SQLiteWebhookJournal(path: path))
            } catch {
                throw ServerError(.webhookSetupFailed, "\(error)")
            }
        }
        return try WebhookSender(settings: settings, context: context, logger: logger)
    }
}
