import Foundation
import RollcallEventLoop
import RollcallRedis
import RollcallTestSupport
import Testing

@Suite struct RedisConnectionTests {
    @Test func pipelinedCommandsCompleteInOrder() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let outcomes = Outcomes()
            for _ in 1...200 { connection.send(["INCR", "counter"], completion: outcomes.record) }
            connection.send(["GET", "counter"], completion: outcomes.record)
            #expect(loop.run(until: { outcomes.count == 201 }, timeout: patience))
            let integers = outcomes.results.prefix(200).map { try? $0.get().integer }
            #expect(integers == (1...200).map { Int64($0) })
            #expect(try outcomes.results[200].get() == .bulk(Array("200")))
            connection.close()
        }
    }

    @Test func argumentsAndRepliesAreBinarySafe() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let key: [UInt8] = [0x6b, 0x00, 0x0d, 0x0a, 0xff]
            let value: [UInt8] = Array(0...255) + [0x00, 0x00]
            var got: [Result<RedisReply, RedisError>] = []
            connection.send([Array("SET"), key, value]) { got.append($0) }
            connection.send([Array("GET"), key]) { got.append($0) }
            connection.send([Array("STRLEN"), key]) { got.append($0) }
            #expect(loop.run(until: { got.count == 3 }, timeout: patience))
            #expect(try got[0].get() == .status("OK"))
            #expect(try got[1].get() == .bulk(value))
            #expect(try got[2].get() == .integer(258))
            #expect(try reply(connection, ["GET", "missing"], on: loop) == .null)
            #expect(try reply(connection, ["RPUSH", "list", "a", ""], on: loop) == .integer(2))
            #expect(try reply(connection, ["LRANGE", "list", "0", "-1"], on: loop) == .array([.bulk(Array("a")), .bulk([])]))
            connection.close()
        }
    }

    @Test func errorRepliesFailTheirCommandOnly() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            let result = try call(connection, ["NOSUCHCOMMAND"], on: loop)
            #expect(throws: RedisError.self) { try result.get() }
            if case .failure(let error) = result {
                #expect(error.code == .errorReply)
                #expect(error.message.hasPrefix("ERR"))
            }
            #expect(try reply(connection, ["PING"], on: loop) == .status("PONG"))
            #expect(connection.state.isConnected)
            connection.close()
        }
    }

    @Test func authenticatesAndSelectsTheDatabaseBeforeAnythingElse() throws {
        let redis = try RedisServer(password: "pass word")
        try EventLoop.withTestLoop { loop in
            let endpoint = try RedisEndpoint(parsing: "redis://:pass%20word@127.0.0.1:\(redis.port)/3")
            let connection = try connectedConnection(endpoint, on: loop)
            #expect(try reply(connection, ["SET", "where", "db3"], on: loop) == .status("OK"))
            let other = try connectedConnection(redis.endpoint(database: 0), on: loop)
            #expect(try reply(other, ["GET", "where"], on: loop) == .null)
            #expect(try reply(other, ["SELECT", "3"], on: loop) == .status("OK"))
            #expect(try reply(other, ["GET", "where"], on: loop) == .bulk(Array("db3")))
            connection.close()
            other.close()
        }
    }

    @Test func aWrongPasswordIsReportedAndNothingIsSent() throws {
        let redis = try RedisServer(password: "right")
        try EventLoop.withTestLoop { loop in
            let endpoint = RedisEndpoint(host: "127.0.0.1", port: redis.port, password: "wrong")
            let connection = RedisConnection(endpoint: endpoint, loop: loop)
            var reported: [RedisConnectionState] = []
            connection.onStateChange = { reported.append($0) }
            connection.start()
            #expect(loop.run(until: { !reported.isEmpty }, timeout: patience))
            guard case .disconnected(let reason) = reported.first else {
                Issue.record("expected disconnected, got \(reported)")
                return
            }
            #expect(reason.code == .handshakeRefused)
            #expect(reason.message.contains("AUTH"))
            let result = try call(connection, ["PING"], on: loop)
            guard case .failure(let error) = result else {
                Issue.record("expected unavailable, got \(result)")
                return
            }
            #expect(error.code == .unavailable)
            #expect((error.retryAfterMs ?? 0) > 0)
            connection.close()
        }
    }

    @Test func nothingListeningMeansUnavailableWhileRetrying() throws {
        let port = try RedisServer().port  // a port whose server is gone again
        try EventLoop.withTestLoop { loop in
            let connection = RedisConnection(endpoint: RedisEndpoint(host: "127.0.0.1", port: port), loop: loop)
            var reported: [RedisConnectionState] = []
            connection.onStateChange = { reported.append($0) }
            connection.start()
            #expect(loop.run(until: { !reported.isEmpty }, timeout: patience))
            if case .disconnected(let reason) = reported.first {
                #expect(reason.code == .connectFailed)
            } else {
                Issue.record("expected disconnected, got \(reported)")
            }
            var outcome: Result<RedisReply, RedisError>?
            connection.send(["PING"]) { outcome = $0 }
            #expect(outcome.map { if case .failure(let error) = $0 { error.code == .unavailable } else { false } } == true)
            connection.close()
        }
    }
}
