import Foundation
import RollcallEventLoop
import RollcallRedis
import RollcallTestSupport
import Testing

/// How long a test waits for something that should happen at once on loopback.
let patience: TimeInterval = 10

/// Collects command outcomes in completion order.
final class Outcomes {
    var results: [Result<RedisReply, RedisError>] = []
    var count: Int { results.count }

    func record(_ result: Result<RedisReply, RedisError>) { results.append(result) }
}

/// A connection started on `loop`, waited on until connected.
func connectedConnection(_ endpoint: RedisEndpoint, on loop: EventLoop,
                         timings: RedisTimings = RedisTimings()) throws -> RedisConnection {
    let connection = RedisConnection(endpoint: endpoint, loop: loop, timings: timings)
    connection.start()
    try #require(loop.run(until: { connection.state.isConnected }, timeout: patience), "never connected: \(connection.state)")
    return connection
}

/// Sends one command and turns the loop until its completion runs.
func call(_ connection: RedisConnection, _ arguments: [String], on loop: EventLoop) throws -> Result<RedisReply, RedisError> {
    var outcome: Result<RedisReply, RedisError>?
    connection.send(arguments) { outcome = $0 }
    try #require(loop.run(until: { outcome != nil }, timeout: patience), "no reply to \(arguments)")
    return outcome!
}

/// ``call(_:_:on:)`` that expects a reply.
func reply(_ connection: RedisConnection, _ arguments: [String], on loop: EventLoop) throws -> RedisReply {
    try call(connection, arguments, on: loop).get()
}

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
}
