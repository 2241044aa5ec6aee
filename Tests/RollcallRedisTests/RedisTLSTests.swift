import Foundation
import RollcallEventLoop
@testable import RollcallRedis
import RollcallTestSupport
import Testing

/// `rediss://` with `cluster.tls` (PROTOCOL §9): the transport's TLS against a real
/// `redis-server --tls-port`, with a CA the test makes with `openssl`.
@Suite struct RedisTLSTests {
    static let certificates = Result { try TestCertificates() }

    private let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.01, maxBackoffSeconds: 0.05)

    private func server(_ certificates: TestCertificates, mutual: Bool = false, other: Bool = false) throws -> RedisServer {
        try RedisServer(tls: RedisServer.TLS(
            certFile: other ? certificates.otherServerCert : certificates.serverCert,
            keyFile: other ? certificates.otherServerKey : certificates.serverKey,
            caFile: certificates.caFile, requireClientCertificate: mutual), password: "pw")
    }

    private func connection(to redis: RedisServer, host: String = "127.0.0.1", _ settings: RedisTLSSettings, on loop: EventLoop) throws -> RedisConnection {
        let target = try RedisTarget(parsing: try #require(redis.tlsURL(host: host)))
        #expect(target.usesTLS)
        return RedisConnection(target: target, loop: loop, timings: timings, tls: try RedisTLSContext(settings: settings))
    }

    /// Starts `connection`, waits until it reports `attempts` failed links (a retry fails like
    /// the first), and returns the latest failure.
    private func refusal(of connection: RedisConnection, on loop: EventLoop, attempts: Int = 2) -> RedisError? {
        var failures: [RedisError] = []
        connection.onLinkFailure = { failures.append($0) }
        connection.start()
        _ = loop.run(until: { failures.count >= attempts }, timeout: patience)
        return failures.last
    }

    @Test func commandsPipelineAndPubSubWorkOverTLS() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates)
        try EventLoop.withTestLoop { loop in
            let connection = try connection(to: redis, RedisTLSSettings(caFile: certificates.caFile), on: loop)
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: timings)
            connection.start()
            probe.subscriber.subscribe("news")
            probe.subscriber.start()
            #expect(loop.run(until: { connection.state.isConnected && probe.resubscriptions == 1 }, timeout: patience),
                    "state \(connection.state), subscriber \(probe.subscriber.state)")
            // 500 commands in one turn: answered in order, a large value too (several TLS records).
            let big = String(repeating: "x", count: 200_000)
            let outcomes = Outcomes()
            connection.send(["SET", "big", big]) { outcomes.record($0) }
            for index in 0..<500 { connection.send(["INCR", "n"]) { outcomes.record($0) }; _ = index }
            connection.send(["GET", "big"]) { outcomes.record($0) }
            #expect(loop.run(until: { outcomes.count == 502 }, timeout: patience))
            #expect(outcomes.results.dropFirst().dropLast().map { try? $0.get().integer } == (1...500).map { Int64($0) })
            #expect(try outcomes.results.last?.get() == .bulk(Array(big.utf8)))
            #expect(publishUntilReceived("hello", on: "news", via: connection, to: probe, loop: loop))
            // A cut link comes back over TLS.
            #expect(try redis.command(["CLIENT", "KILL", "TYPE", "normal"]).hasPrefix(":"))
            #expect(loop.run(until: { connection.state.isConnected && (try? reply(connection, ["PING"], on: loop)) == .status("PONG") },
                             timeout: patience))
            probe.subscriber.close()
            connection.close()
        }
    }

    @Test func aHostNameIsCheckedAgainstTheCertificatesDNSName() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates)
        try EventLoop.withTestLoop { loop in
            let connection = try connection(to: redis, host: "localhost", RedisTLSSettings(caFile: certificates.caFile), on: loop)
            connection.start()
            #expect(loop.run(until: { connection.state.isConnected }, timeout: patience), "\(connection.state)")
            connection.close()
        }
    }

    @Test func mutualTLSNeedsTheClientCertificate() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates, mutual: true)
        try EventLoop.withTestLoop { loop in
            let withCertificate = try connection(to: redis, RedisTLSSettings(
                caFile: certificates.caFile, certFile: certificates.clientCert, keyFile: certificates.clientKey), on: loop)
            withCertificate.start()
            #expect(loop.run(until: { withCertificate.state.isConnected }, timeout: patience), "\(withCertificate.state)")
            #expect(try reply(withCertificate, ["SET", "k", "v"], on: loop) == .status("OK"))
            withCertificate.close()

            let without = try connection(to: redis, RedisTLSSettings(caFile: certificates.caFile), on: loop)
            let failure = refusal(of: without, on: loop)
            #expect(!without.state.isConnected)
            #expect([.tlsHandshakeFailed, .connectionLost].contains(failure?.code), "\(failure.map { "\($0)" } ?? "no failure")")
            without.close()
        }
    }

    @Test func aCertificateOfAnotherCAIsRefusedAndAFixedOneIsPickedUp() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates, other: true)
        try EventLoop.withTestLoop { loop in
            let connection = try connection(to: redis, RedisTLSSettings(caFile: certificates.caFile), on: loop)
            let failure = refusal(of: connection, on: loop)
            #expect(failure?.code == .tlsVerifyFailed, "\(failure.map { "\($0)" } ?? "no failure")")
            #expect(failure?.message.contains("does not verify") == true)
            var outcome: Result<RedisReply, RedisError>?
            connection.send(["PING"]) { outcome = $0 }
            guard case .failure(let error) = outcome else { Issue.record("answered while refused: \(String(describing: outcome))"); return }
            #expect(error.code == .unavailable && error.message.contains("does not verify"), "\(error)")
            // The server gets the right certificate: the next retry verifies.
            #expect(try redis.command(["CONFIG", "SET", "tls-cert-file", certificates.serverCert, "tls-key-file", certificates.serverKey]) == "+OK")
            #expect(loop.run(until: { connection.state.isConnected }, timeout: patience), "\(connection.state)")
            connection.close()
        }
    }

    @Test func aServerNameTheCertificateDoesNotCarryIsRefused() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates)
        try EventLoop.withTestLoop { loop in
            let connection = try connection(to: redis, RedisTLSSettings(caFile: certificates.caFile, serverName: "redis.example.com"), on: loop)
            let failure = refusal(of: connection, on: loop)
            #expect(failure?.code == .tlsVerifyFailed, "\(failure.map { "\($0)" } ?? "no failure")")
            #expect(failure?.message.contains("hostname mismatch") == true, "\(failure?.message ?? "")")
            connection.close()
        }
    }

    @Test func aTLSLinkToAPlainPortIsNeverConnected() throws {
        let certificates = try Self.certificates.get()
        let redis = try server(certificates)
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "rediss://:pw@127.0.0.1:\(redis.port)")
            let connection = RedisConnection(target: target, loop: loop, timings: RedisTimings(timeoutSeconds: 0.5),
                                             tls: try RedisTLSContext(settings: RedisTLSSettings(caFile: certificates.caFile)))
            // Redis reads the ClientHello as an unfinished inline command and answers nothing:
            // the watchdog ends the attempt (or Redis closes it), never a connected state.
            let failure = refusal(of: connection, on: loop, attempts: 1)
            #expect([.tlsHandshakeFailed, .connectionLost, .timeout].contains(failure?.code), "\(failure.map { "\($0)" } ?? "no failure")")
            #expect(!connection.state.isConnected)
            connection.close()
        }
    }

    @Test func settingsThatCannotBeLoadedNameTheirKey() throws {
        let certificates = try Self.certificates.get()
        func problem(_ settings: RedisTLSSettings) -> String? {
            do {
                _ = try RedisTLSContext(settings: settings)
                return nil
            } catch {
                return (error as? RedisError).map { "\($0.code.rawValue) \($0.message)" }
            }
        }
        #expect(problem(RedisTLSSettings(caFile: "/nonexistent/ca.pem"))?.hasPrefix("REDIS_TLS_INVALID cluster.tls.caFile: /nonexistent/ca.pem cannot be read") == true)
        #expect(problem(RedisTLSSettings(certFile: certificates.clientCert))?.contains("cluster.tls.keyFile: required when cluster.tls.certFile is set") == true)
        #expect(problem(RedisTLSSettings(keyFile: certificates.clientKey))?.contains("cluster.tls.certFile: required") == true)
        #expect(problem(RedisTLSSettings(caFile: certificates.serverKey))?.contains("cluster.tls.caFile: cannot load caFile") == true)
        #expect(problem(RedisTLSSettings(certFile: certificates.clientCert, keyFile: certificates.serverKey))?
            .contains("cluster.tls.keyFile: keyFile does not match certFile") == true)
        #expect(problem(RedisTLSSettings(serverName: "two words"))?.contains("cluster.tls.serverName") == true)
        #expect(problem(RedisTLSSettings(caFile: certificates.caFile, certFile: certificates.clientCert, keyFile: certificates.clientKey)) == nil)
    }
}
