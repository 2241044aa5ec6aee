import CRollcallShim
import Foundation
import Logging
import RollcallCore
import RollcallProtocol
import RollcallEventLoop
import RollcallRedisEngine

/// The libwebsockets context: the protocol list, the vhost on `listen`, TLS, the libev loop,
/// then what runs on that loop (the write coalescer, batched sends, the cluster link).
extension BrokerServer {
    func createContext() -> Result<Int, ServerError> {
        let host = configuration.listen.host == "localhost" ? "127.0.0.1" : configuration.listen.host
        let protocolList = loop.memory.protocols(count: 2)
        protocolList[0].name = UnsafePointer(cString("rollcall.v1"))
        protocolList[0].callback = rollcallLWSCallback
        protocolList[0].per_session_data_size = MemoryLayout<rollcall_pss_t>.size
        protocolList[0].rx_buffer_size = Self.receiveChunkBytes
        // Without it lws caps every send() at rx_buffer_size and drains the rest of a frame
        // one such chunk per service turn — each turn a poll() of every descriptor (storm bench).
        protocolList[0].tx_packet_size = Int(Self.socketSendBufferBytes)

        var info = lws_context_creation_info()
        info.port = Int32(configuration.listen.port)
        info.iface = UnsafePointer(cString(host))
        info.vhost_name = UnsafePointer(cString("default"))
        info.protocols = UnsafePointer(protocolList)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.count_threads = 1
        if Self.isIPv4(host) {
            info.options |= UInt64(LWS_SERVER_OPTION_DISABLE_IPV6)
        }
        info.timeout_secs = 5
        if configuration.http.permessageDeflate {
            // RFC 7692, lws' implementation: used with clients that offer it (browsers always do).
            info.extensions = rollcall_permessage_deflate_extensions()
        }
        // No lws validity timer: lws' default policy (ping after 300 s) arms a per-connection
        // timer in its sorted timer list at every establishment and pong, an O(n) insertion
        // that callgrind showed as ~9% of the broker's instructions at 3,000 logins.
        info.retry_and_idle_policy = UnsafePointer(loop.memory.noIdlePolicy())
        // lws sizes its descriptor table from the soft limit, so raise it first.
        gate.cap = ConnectionCap(descriptorLimit: ConnectionCap.raiseDescriptorLimit())
        let tls = configuration.tls
        let clientURLs = [configuration.webhooks.url, configuration.auth.mode == .jwt ? configuration.auth.jwksUrl : nil]
        if clientURLs.contains(where: { url in url.flatMap { try? WebhookURL($0) }?.secure == true }) {
            // lws' TLS library set-up for the webhook or key set client's https (the listener stays plain without a cert).
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
        }
        if let certFile = tls.certFile, let keyFile = tls.keyFile {
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            info.ssl_cert_filepath = UnsafePointer(cString(certFile))
            info.ssl_private_key_filepath = UnsafePointer(cString(keyFile))
            // HTTP/1.1 only: lws would otherwise negotiate h2 over TLS, whose flow control
            // cuts the one-write dynamic bodies (/metrics) short; WebSockets use HTTP/1.1 anyway.
            info.alpn = UnsafePointer(cString("http/1.1"))
        }

        LWSLogBridge.recentErrors = []
        let creation = EventLoop.createContext(info, onLibev: EventLoop.isRequested)
        loop.eventLoop = creation.loop
        if creation.fellBackToPoll, creation.context != nil {
            logger.warning("libwebsockets' libev loop is unavailable; using its poll loop")
        }
        guard let created = creation.context else {
            let errors = LWSLogBridge.recentErrors
            let cause = errors.isEmpty ? "" : " (libwebsockets: \(errors.joined(separator: "; ")))"
            if let certFile = tls.certFile, let keyFile = tls.keyFile {
                return .failure(ServerError(
                    .tlsFileInvalid,
                    "cannot start TLS on \(host):\(configuration.listen.port) with tls.certFile \(certFile) and tls.keyFile \(keyFile)\(cause)"))
            }
            return .failure(ServerError(.listenFailed, "cannot listen on \(host):\(configuration.listen.port)\(cause)"))
        }
        loop.context = created
        guard let vhost = lws_get_vhost_by_name(created, "default") else {
            destroy(created)
            return .failure(ServerError(.listenFailed, "libwebsockets created no vhost"))
        }
        let bound = Int(lws_get_vhost_listen_port(vhost))
        guard bound > 0 else {
            destroy(created)
            return .failure(ServerError(.listenFailed, "cannot listen on \(host):\(configuration.listen.port)"))
        }
        loop.timer.attach(ServiceTimer(context: created) { [unowned self] in timerFired() })
        if let eventLoop = loop.eventLoop, configuration.http.coalesceWindowSeconds > 0 {
            output.coalescer = WriteCoalescer(loop: eventLoop, windowSeconds: configuration.http.coalesceWindowSeconds,
                                       busySeconds: configuration.http.coalesceBusySeconds) { [unowned self] id in flushHeld(id) }
        }
        startBatchedSends()
        if configuration.cluster.isEnabled {
            guard let eventLoop = loop.eventLoop else {
                destroy(created)
                return .failure(ServerError(.listenFailed, "cluster mode needs libwebsockets' libev loop (unset ROLLCALL_EVENT_LOOP)"))
            }
            do {
                let link = try ClusterLink(configuration: configuration, nodeId: nodeId, epoch: clusterEpoch, loop: eventLoop, logger: logger)
                link.deliver = { [unowned self] event in feed(event) }
                link.start()
                services.clusterLink = link
            } catch {
                destroy(created)
                return .failure(ServerError(.listenFailed, "\(error)"))
            }
        }
        do throws(ServerError) {
            services.webhookSender = try makeWebhookSender(context: created)
            services.keySets = try makeKeySets(context: created)
        } catch {
            destroy(created)
            return .failure(error)
        }
        logger.info("listening", metadata: [
            "host": "\(host)", "port": "\(bound)", "tls": "\(tls.certFile != nil)",
            "connectionCap": "\(gate.cap.limit)", "descriptorLimit": "\(gate.cap.descriptorLimit)",
        ])
        if gate.cap.descriptorLimit < 4 * ConnectionCap.reserve {
            logger.warning("the open-file limit is low: at most \(gate.cap.limit) connections (raise ulimit -n)")
        }
        services.keySets?.start()
        armTimer()
        return .success(bound)
    }

    func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        loop.memory.cString(string)
    }

    /// Destroys a context whose set-up failed, with the timer that was already on it.
    private func destroy(_ created: OpaquePointer) {
        loop.timer.detach()
        lws_context_destroy(created)
        loop.context = nil
    }

    private static func isIPv4(_ host: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }
}
