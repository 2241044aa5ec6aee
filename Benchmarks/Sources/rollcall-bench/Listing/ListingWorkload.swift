import Foundation
import RollcallCore
import RollcallProtocol

/// An in-process broker with one big channel and one user in many channels, and timed calls
/// against it. Replies are read back from the broker's actions, so a failing call is noticed.
final class ListingWorkload {
    /// Per-call timings in microseconds, sorted.
    struct Timings {
        let sorted: [Double]
        var median: Double { sorted[sorted.count / 2] }
        var p99: Double { sorted[min(sorted.count - 1, sorted.count * 99 / 100)] }
        /// (percentile, µs) points for the chart.
        var curve: [[Double]] {
            stride(from: 0, through: 100, by: 5).map { percentile in
                [Double(percentile), sorted[min(sorted.count - 1, sorted.count * percentile / 100)]]
            }
        }
    }

    /// A call whose reply was not `ok`.
    struct CallFailed: Error, CustomStringConvertible {
        let description: String
    }

    private let broker: Broker
    private let manyChannels: Int
    private var nextConnection: UInt64 = 0
    private var nextId = 0
    private var observer = ConnectionID(0)
    private(set) var lastPageBytes = 0

    init(channels: Int) {
        manyChannels = channels
        var configuration = Configuration()
        configuration.storage.path = nil
        configuration.limits.requestsPerSecond = 1e9
        configuration.limits.requestBurst = 1 << 30
        configuration.limits.maxChannelsPerSession = max(channels, 256)
        // The broadcast channel stays in announce mode, as in the latency bench.
        configuration.presence.maxInstantEvents = Self.broadcastMembers + 10
        broker = Broker(configuration: configuration)
        observer = login("observer")
    }

    /// Logs in `members` users, each joining `big` without presence; returns the seconds taken.
    func fillBigChannel(members: Int) -> Double {
        let start = MonotonicSeconds.now
        for index in 0..<members {
            let connection = login("user-\(index)")
            _ = send(#"{"op":"join","channel":"big","presence":false,"messages":false}"#, on: connection)
        }
        return MonotonicSeconds.now - start
    }

    /// Joins the observer to `channels` channels.
    func joinManyChannels() {
        for index in 0..<manyChannels {
            _ = send(#"{"op":"join","channel":"room-\#(index)","presence":false,"messages":false}"#, on: observer)
        }
    }

    /// The `nextPage` cursor that starts after the first `member` members (walks pages of 1000).
    func cursor(atMember member: Int) throws -> String? {
        var cursor: String?
        var walked = 0
        while walked < member {
            let size = min(1000, member - walked)
            let reply = try call(page(cursor: cursor, size: size, includeState: false))
            cursor = reply["nextPage"]?.stringValue
            walked += size
        }
        return cursor
    }

    /// One `getOnlineUsers` page of 100.
    func onlineUsersPage(cursor: String?, includeState: Bool = false) -> [UInt8] {
        let bytes = send(page(cursor: cursor, size: 100, includeState: includeState), on: observer)
        lastPageBytes = bytes.count
        return bytes
    }

    /// Members of the broadcast channel (``fillBroadcastChannel()``): the latency bench's 1000.
    static let broadcastMembers = 1000

    private var prober: ConnectionID?
    private var probes = 0

    /// Logs in ``broadcastMembers`` users, each joining `bench:latency` with presence.
    func fillBroadcastChannel() {
        for index in 0..<Self.broadcastMembers {
            let connection = login("member-\(index)")
            if prober == nil { prober = connection }
            _ = send(#"{"op":"join","channel":"bench:latency","presence":true,"messages":false}"#, on: connection)
        }
    }

    /// One `setState` by the first member: the core encodes one `stateChanged` and returns a
    /// `.send` for each other member. Returns the reply; `recipients` gets the sends.
    func broadcastState(recipients: inout Int) -> [UInt8] {
        probes += 1
        guard let prober else { return [] }
        let request = #"{"op":"setState","channel":"bench:latency","state":{"probe":"\#(probes)"}}"#
        var reply: [UInt8] = []
        recipients = 0
        for action in handle(request, on: prober) {
            guard case .send(let target, let bytes, _) = action else { continue }
            if target == prober { reply = bytes } else { recipients += 1 }
        }
        return reply
    }

    /// Writes over `bytes` of memory (twice the 32 MiB L3 cache of the machine in BENCHMARKS.md),
    /// evicting the CPU caches as 100 ms of other work between two probes does in the broker.
    func evictCaches(bytes: Int = 64 << 20) {
        if scratch.count != bytes { scratch = [UInt8](repeating: 0, count: bytes) }
        scratch.withUnsafeMutableBytes { buffer in
            for offset in stride(from: 0, to: buffer.count, by: 64) { buffer[offset] &+= 1 }
        }
    }

    private var scratch: [UInt8] = []

    /// `getUserChannels` for the observer.
    func userChannels() -> [UInt8] {
        send(#"{"op":"getUserChannels","userId":"observer"}"#, on: observer)
    }

    /// Times `calls` calls of `body` (after a warm-up tenth) and checks the last reply is ok;
    /// `before` runs ahead of each call, untimed.
    func time(calls: Int, before: () -> Void = {}, _ body: () -> [UInt8]) throws -> Timings {
        for _ in 0..<max(1, calls / 10) { _ = body() }
        var samples: [Double] = []
        samples.reserveCapacity(calls)
        var last: [UInt8] = []
        for _ in 0..<calls {
            before()
            let start = MonotonicSeconds.now
            last = body()
            samples.append((MonotonicSeconds.now - start) * 1e6)
        }
        try check(last)
        return Timings(sorted: samples.sorted())
    }

    // MARK: - Plumbing

    private func page(cursor: String?, size: Int, includeState: Bool) -> String {
        let pagePart = cursor.map { #","page":"\#($0)""# } ?? ""
        return #"{"op":"getOnlineUsers","channel":"big","pageSize":\#(size),"includeState":\#(includeState)\#(pagePart)}"#
    }

    private func login(_ userId: String) -> ConnectionID {
        nextConnection += 1
        let connection = ConnectionID(nextConnection)
        _ = broker.handle(.opened(connection))
        _ = send(#"{"op":"login","userId":"\#(userId)","platform":"cli"}"#, on: connection)
        return connection
    }

    /// Feeds one request to the broker, with an `id` added; returns every action it produced.
    private func handle(_ request: String, on connection: ConnectionID) -> [Action] {
        nextId += 1
        let framed = #"{"id":\#(nextId),"# + request.dropFirst()
        return broker.handle(.received(connection, Array(framed.utf8)))
    }

    /// Sends one request (an `id` is added) and returns the bytes of its reply.
    private func send(_ request: String, on connection: ConnectionID) -> [UInt8] {
        for action in handle(request, on: connection) {
            if case .send(let target, let bytes, _) = action, target == connection, bytes.starts(with: Array(#"{"id":"#.utf8)) {
                return bytes
            }
        }
        return []
    }

    private func call(_ request: String) throws -> JSON {
        let bytes = send(request, on: observer)
        try check(bytes)
        guard case .object(let object)? = try? JSONParser.parse(bytes) else { throw CallFailed(description: "unreadable reply") }
        return object["result"] ?? .null
    }

    private func check(_ reply: [UInt8]) throws {
        guard case .object(let object)? = try? JSONParser.parse(reply), object["ok"]?.boolValue == true else {
            throw CallFailed(description: "call failed: \(String(decoding: reply, as: UTF8.self).prefix(300))")
        }
    }
}
