import ArgumentParser
import Foundation
import Logging
import RollcallRedisEngine
import RollcallCore
import RollcallServer
import RollcallStorage

/// `rollcall [--config FILE] [--host H] [--port P] [--check-config]`: the presence broker.
///
/// Prints exactly one line, `listening on HOST:PORT`, to stdout once it accepts connections
/// (with `log.format: "json"`, a JSON line whose `msg` is that text); logs go to stderr, in
/// the same format. SIGINT/SIGTERM shut it down gracefully (close 1001, exit 0). A
/// configuration that cannot be read is reported as text (its format is not known yet).
struct RollcallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollcall",
        abstract: "Rollcall presence broker (WebSocket + HTTP on one port).")

    @Option(name: .long, help: "JSON configuration file (PROTOCOL §8). Defaults apply without one.")
    var config: String?

    @Option(name: .long, help: "Address to bind (overrides listen.host).")
    var host: String?

    @Option(name: .long, help: "TCP port; 0 picks a free one (overrides listen.port).")
    var port: Int?

    @Flag(name: .customLong("check-config"), help: "Validate the configuration, print 'configuration OK' and exit.")
    var checkConfig = false

    func run() throws {
        let configuration: Configuration
        do {
            configuration = try loadConfiguration(path: config, host: host, port: port)
        } catch {
            FileHandle.standardError.write(Data("rollcall: configuration error: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let logFormat = BrokerLogFormat(configuration.log)
        do {
            try TLSFiles.check(configuration.tls)
            try KeySetFiles.check(configuration.auth)
            if configuration.cluster.isEnabled {
                _ = try ClusterLink.tlsContext(of: configuration)
                _ = try ClusterLink.target(of: configuration)
            }
        } catch {
            logFormat.report("configuration error: \(error)")
            throw ExitCode(1)
        }
        if checkConfig {
            print("configuration OK")
            return
        }

        logFormat.bootstrap()
        // A cluster node needs an id (random when cluster.nodeId is null); one node is "standalone".
        let nodeId = configuration.cluster.nodeId
            ?? (configuration.cluster.isEnabled ? BrokerServer.randomNodeId() : Broker.standaloneNodeId)
        var epoch: String?
        if configuration.cluster.isEnabled {
            // Before serving: the prefix is ours, and the shared sections equal the running nodes'.
            do {
                epoch = try ClusterStartCheck.run(configuration: configuration, nodeId: nodeId)
            } catch {
                logFormat.report("cluster error: \(error)")
                throw ExitCode(1)
            }
        }
        let store: any StatusStore
        do {
            // Cluster mode keeps durable data in Redis (PROTOCOL §9), never in storage.path.
            store = configuration.cluster.isEnabled ? MemoryStatusStore() : try StatusStores.open(configuration)
        } catch {
            logFormat.report("storage error: \(error)")
            throw ExitCode(1)
        }
        let authenticator: any LoginAuthenticator
        do {
            authenticator = try Authenticators.make(configuration, environment: ProcessInfo.processInfo.environment)
        } catch {
            logFormat.report("configuration error: \(error)")
            throw ExitCode(1)
        }
        let logger = Logger(label: "rollcall")
        for warning in Authenticators.warnings(configuration, environment: ProcessInfo.processInfo.environment) {
            logger.warning("\(warning)")
        }
        if configuration.auth.mode == .none, configuration.auth.allowInsecure, !LoopbackHost.contains(configuration.listen.host) {
            logger.warning("auth.mode is none on a non-loopback address (auth.allowInsecure): anyone who can reach \(configuration.listen.host) can log in as anyone")
        }
        let server = BrokerServer(configuration: configuration, store: store, authenticator: authenticator, logger: logger,
                                  nodeId: nodeId, clusterEpoch: epoch)
        let boundPort: Int
        do {
            boundPort = try server.start()
        } catch {
            logFormat.report("\(error)")
            throw ExitCode(1)
        }
        server.installSignalHandlers()
        logFormat.announce("listening on \(configuration.listen.host):\(boundPort)")
        server.wait()
        do {
            try store.close()
        } catch {
            logFormat.report("storage error at shutdown: \(error)")
        }
    }
}
