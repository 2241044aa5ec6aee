import RollcallProtocol

/// A rule between several keys, checked after every key is in range.
package struct ConfigurationRule {
    /// The key the error names.
    let path: String
    /// The problem, or nil when the configuration keeps the rule.
    let violation: (Configuration, _ environment: [String: String]) -> String?

    /// Every cross-key rule; `docs/configuration.md` lists the same.
    static var all: [ConfigurationRule] {
        [
            ConfigurationRule(path: "heartbeat.timeoutSeconds") { configuration, _ in
                configuration.heartbeat.timeoutSeconds > configuration.heartbeat.intervalSeconds ? nil
                    : "must be greater than heartbeat.intervalSeconds (\(seconds(configuration.heartbeat.intervalSeconds)))"
            },
            ConfigurationRule(path: "presence.hysteresis") { configuration, _ in
                configuration.presence.hysteresis < configuration.presence.maxInstantEvents ? nil
                    : "must be less than presence.maxInstantEvents (\(configuration.presence.maxInstantEvents))"
            },
            ConfigurationRule(path: "http.coalesceBusySeconds") { configuration, _ in
                configuration.http.coalesceBusySeconds >= configuration.http.coalesceWindowSeconds ? nil
                    : "must be at least http.coalesceWindowSeconds (\(seconds(configuration.http.coalesceWindowSeconds)))"
            },
            ConfigurationRule(path: "limits.maxBatchBytes") { configuration, _ in
                configuration.limits.maxBatchBytes <= configuration.limits.maxOutboundBytes ? nil
                    : "must be at most limits.maxOutboundBytes (\(configuration.limits.maxOutboundBytes))"
            },
            ConfigurationRule(path: "tls.keyFile") { configuration, _ in
                configuration.tls.certFile != nil && configuration.tls.keyFile == nil
                    ? "required when tls.certFile is set" : nil
            },
            ConfigurationRule(path: "tls.certFile") { configuration, _ in
                configuration.tls.keyFile != nil && configuration.tls.certFile == nil
                    ? "required when tls.keyFile is set" : nil
            },
            ConfigurationRule(path: "auth.secret") { configuration, environment in
                let auth = configuration.auth
                guard auth.mode == .jwt, auth.secret == nil, auth.secrets.isEmpty, !auth.hasKeySet else { return nil }
                if let name = auth.secretEnv, let value = environment[name], !value.isEmpty { return nil }
                return Configuration.Auth.noKeyMessage(secretEnv: auth.secretEnv)
            },
            ConfigurationRule(path: "auth.jwksUrl") { configuration, _ in
                guard let url = configuration.auth.jwksUrl else { return nil }
                do throws(WebhookURLError) {
                    _ = try WebhookURL(url)
                    return nil
                } catch {
                    return "\(error.message) (got \(JSON.string(url).compactString))"
                }
            },
            ConfigurationRule(path: "auth.mode") { configuration, _ in
                guard configuration.auth.mode == .none, !configuration.auth.allowInsecure,
                      !LoopbackHost.contains(configuration.listen.host) else { return nil }
                return "\"none\" on the non-loopback listen.host \(configuration.listen.host) needs auth.allowInsecure: true"
            },
            ConfigurationRule(path: "cluster.redis") { configuration, _ in
                // The scheme here; the rest (hosts, ports, master name, database) when the node
                // parses it (RollcallRedis' RedisTarget), which --check-config runs too.
                guard let url = configuration.cluster.redis else { return nil }
                let schemes = ["redis://", "redis+sentinel://", "rediss://", "rediss+sentinel://", "redis+cluster://", "rediss+cluster://"]
                return schemes.contains { url.lowercased().hasPrefix($0) && url.count > $0.count } ? nil
                    : "must be a redis[s]://[user:password@]host:port[/db], redis[s]+sentinel://[user:password@]host:port[,host:port…]/masterName[/db] or redis[s]+cluster://[user:password@]host:port[,host:port…] URL (got \(JSON.string(url).compactString))"
            },
            ConfigurationRule(path: "cluster.tls.keyFile") { configuration, _ in
                let tls = configuration.cluster.tls
                return tls.certFile != nil && tls.keyFile == nil ? "required when cluster.tls.certFile is set" : nil
            },
            ConfigurationRule(path: "cluster.tls.certFile") { configuration, _ in
                let tls = configuration.cluster.tls
                return tls.keyFile != nil && tls.certFile == nil ? "required when cluster.tls.keyFile is set" : nil
            },
            ConfigurationRule(path: "cluster.tls") { configuration, _ in
                // Only a rediss URL speaks TLS: settings that would be ignored are refused.
                guard configuration.cluster.tls.isSet else { return nil }
                let url = configuration.cluster.redis?.lowercased() ?? ""
                return ["rediss://", "rediss+sentinel://", "rediss+cluster://"].contains { url.hasPrefix($0) } ? nil
                    : "is set, but cluster.redis is not a rediss://, rediss+sentinel:// or rediss+cluster:// URL (TLS is used only with those)"
            },
            ConfigurationRule(path: "cluster.keyPrefix") { configuration, _ in
                ClusterNames.problem(withKeyPrefix: configuration.cluster.keyPrefix)
            },
            ConfigurationRule(path: "cluster.nodeId") { configuration, _ in
                configuration.cluster.nodeId.flatMap(ClusterNames.problem(withNodeId:))
            },
            ConfigurationRule(path: "cluster.nodeTimeoutSeconds") { configuration, _ in
                let cluster = configuration.cluster
                return cluster.nodeTimeoutSeconds >= 2 * cluster.heartbeatSeconds ? nil
                    : "must be at least twice cluster.heartbeatSeconds (\(seconds(cluster.heartbeatSeconds)))"
            },
            ConfigurationRule(path: "api.keys") { configuration, _ in
                configuration.api.keys.lazy.compactMap(ServerAPIKeys.problem(with:)).first
            },
            ConfigurationRule(path: "api.keyEnv") { configuration, environment in
                guard let name = configuration.api.keyEnv, let value = environment[name], !value.isEmpty else { return nil }
                return ServerAPIKeys.problem(with: value).map { "the environment variable \(name): \($0)" }
            },
        ] + webhookRules
    }

    private static func seconds(_ value: Double) -> String { JSONNumber(value).literal }
}
