import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 30, step 3: the list of channels is a bucket in each channel's key group
/// (`P{<g>}channels`); `getChannels` merges every group's page (message before stream, byte
/// order, cut at the page size, the cursor the last entry), and `getInfo` sums the groups'
/// counts. Laid out as on Redis Cluster (`cluster.keyGroupCount`), the listing is the one a
/// single group gives and the one the standalone broker gives, page for page, whichever node
/// continues a cursor. No hold, resume or reap here (their scripts still assume one group).
@Suite("Cluster: getChannels and getInfo merge every key group's bucket")
struct ClusterKeyGroupListingTests {
    /// Message and stream channels whose names sort apart by bytes (`Z` < `a` < `room:` < `ü`).
    private static let channels: [(name: String, type: String)] =
        (0..<24).map { ("room:\($0)", "message") } + (0..<8).map { ("room:\($0)", "stream") }
        + [("Z", "message"), ("a b", "message"), ("ünï", "message"), ("roo", "message"), ("room:", "stream"), ("zz", "stream")]

    private func configuration(groups: Int?) -> Configuration {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = groups
        configuration.storage.path = nil
        configuration.limits.requestsPerSecond = 1_000_000
        configuration.limits.requestBurst = 1_000_000
        return configuration
    }

    private func joinArguments(_ channel: (name: String, type: String)) -> [String: JSON] {
        ["channel": .string(channel.name), "channelType": .string(channel.type)]
    }

    /// Every page of `getChannels` with `prefix` and `pageSize`, each asked through `ask(pageNumber, body)`.
    private func pages(prefix: String?, pageSize: Int, _ ask: (Int, [String: JSON]) throws -> JSON) throws -> [[String]] {
        var pages: [[String]] = []
        var cursor: JSON = .null
        repeat {
            var body: [String: JSON] = ["pageSize": .int(pageSize)]
            if let prefix { body["prefix"] = .string(prefix) }
            if case .string = cursor { body["page"] = cursor }
            let result = try #require(try ask(pages.count, body)["result"], "page \(pages.count)")
            pages.append((result["channels"]?.arrayValue ?? []).map { entry in
                "\(entry.string("channelType") ?? "?") \(entry.string("channel") ?? "?") \(entry["occupancy"]?.compactString ?? "?") "
                    + "\(entry.string("mode") ?? "?") \(entry["seq"]?.compactString ?? "?")"
            })
            cursor = result["nextPage"] ?? .null
        } while cursor != .null && pages.count <= Self.channels.count
        return pages
    }

    /// A bed of two nodes with every channel joined by one member through node 0.
    private func bed(groups: Int?, prefix: String) throws -> ClusterBed {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(groups: groups), prefix: prefix)
        let member = try bed.login("member", on: 0)
        for channel in Self.channels {
            #expect(try bed.request(member, "join", joinArguments(channel))["ok"]?.boolValue == true, "\(channel)")
        }
        return bed
    }

    /// The same listing from a standalone broker (no Redis): the order PROTOCOL §10 defines.
    private func standalonePages(prefix: String?, pageSize: Int) throws -> [[String]] {
        let broker = Broker(configuration: configuration(groups: nil))
        var replies: [Int: JSON] = [:], answers: [APIRequestID: JSON] = [:]
        let handle = { (event: InboundEvent) in
            for action in broker.handle(event) {
                switch action {
                case .send(_, let bytes, _):
                    if let value = try? JSONParser.parse(bytes), let id = value["id"]?.numberValue?.intValue { replies[id] = value }
                case .respond(let id, _, let body):
                    answers[id] = (try? JSONParser.parse(body)) ?? .null
                default:
                    break
                }
            }
        }
        let connection = ConnectionID(1)
        handle(.opened(connection))
        var nextId = 0
        let request = { (op: String, arguments: [String: JSON]) -> JSON in
            nextId += 1
            var members: [(key: String, value: JSON)] = [("id", .int(nextId)), ("op", .string(op))]
            for key in arguments.keys.sorted() { members.append((key, arguments[key]!)) }
            handle(.received(connection, JSON.object(JSONObject(members)).encoded()))
            return replies[nextId] ?? .null
        }
        #expect(request("login", ["userId": "member"])["ok"]?.boolValue == true)
        for channel in Self.channels { #expect(request("join", joinArguments(channel))["ok"]?.boolValue == true) }
        var nextAPI: UInt64 = 0
        return try pages(prefix: prefix, pageSize: pageSize) { _, body in
            nextAPI += 1
            let id = APIRequestID(nextAPI)
            handle(.api(id, op: "getChannels", body: JSON.object(JSONObject(body.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })).encoded()))
            return try #require(answers[id])
        }
    }

    @Test("pages across 16 groups are the one-group bed's and the standalone broker's, each cursor continued on the other node")
    func pagesMergeAcrossGroups() throws {
        let grouped = try bed(groups: 16, prefix: "kglist16:")
        let single = try bed(groups: nil, prefix: "kglist1:")
        let presence = try #require(grouped.brokers[0].engines.presence as? ClusterPresence)
        let used = Set(Self.channels.map { channel in
            presence.keys.channel(ChannelKey(type: channel.type == "stream" ? .stream : .message, name: Name(unchecked: channel.name))).groupNumber
        })
        #expect(used.count >= 10, "the channels spread over many groups: \(used.sorted())")

        for (prefix, pageSize) in [(nil, 7), ("room:", 5), (nil, 1), ("room:1", 3), (nil, 1000), ("nothing", 4)] as [(String?, Int)] {
            let expected = try standalonePages(prefix: prefix, pageSize: pageSize)
            let onGroups = try pages(prefix: prefix, pageSize: pageSize) { index, body in
                try grouped.api("getChannels", body, on: index % 2).body
            }
            let onOne = try pages(prefix: prefix, pageSize: pageSize) { index, body in
                try single.api("getChannels", body, on: (index + 1) % 2).body
            }
            #expect(onGroups == expected, "prefix \(prefix ?? "-"), pageSize \(pageSize)")
            #expect(onOne == expected, "prefix \(prefix ?? "-"), pageSize \(pageSize)")
        }
        #expect(try standalonePages(prefix: nil, pageSize: 1000).first?.count == Self.channels.count)
    }

    @Test("getInfo counts the channels of every group; a vacated channel leaves its group's bucket")
    func infoSumsTheGroups() throws {
        let bed = try bed(groups: 16, prefix: "kginfo:")
        #expect(try bed.api("getInfo", [:], on: 1).body["result"]?["channels"] == .int(Self.channels.count))
        let other = try bed.login("other", on: 1)
        #expect(try bed.request(other, "join", ["channel": "fresh"])["ok"]?.boolValue == true)
        #expect(try bed.api("getInfo", [:], on: 0).body["result"]?["channels"] == .int(Self.channels.count + 1))
        #expect(try bed.request(other, "leave", ["channel": "fresh"])["ok"]?.boolValue == true)
        #expect(try bed.api("getInfo", [:], on: 0).body["result"]?["channels"] == .int(Self.channels.count))
        let listed = try bed.api("getChannels", ["prefix": "fresh"], on: 1).body["result"]?["channels"]?.arrayValue
        #expect(listed?.isEmpty == true)
    }
}
