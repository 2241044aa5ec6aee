import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// The wire's JSON for one object, parsed as the client parses frames.
private func parsed(_ text: String) throws -> JSONObject {
    guard case .object(let object) = try JSONParser.parse(text) else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an object")) }
    return object
}

/// Typed events and results (`RollcallEvent`, `Requests.*.Result`) from what the broker writes.
@Suite struct TypedEventTests {
    @Test("each event kind decodes from the wire object, with the documented defaults")
    func eachKindDecodes() throws {
        let join = RollcallEvent(Event(try parsed(#"{"event":"presence","type":"join","channel":"room","publisher":"bob","state":{"mood":"ok"},"info":{"name":"Bob"},"occupancy":2,"mode":"announce","seq":5,"timestamp":1710487149497}"#)))
        guard case .presence(let presence) = join else { Issue.record("\(join)"); return }
        #expect(presence.type == .join && presence.channelRef == ChannelRef("room") && presence.publisher == "bob")
        #expect(presence.state == ["mood": "ok"] && presence.info == ["name": "Bob"] && presence.mode == .announce)
        #expect(presence.seq == 5 && presence.occupancy == 2 && presence.timestamp == 1_710_487_149_497)

        let snapshot = RollcallEvent(Event(try parsed(#"{"event":"presence","type":"snapshot","channel":"s","channelType":"stream","snapshot":[{"userId":"a","state":{"k":"v"}},{"userId":"b"}],"truncated":true,"nextPage":"p2","seq":9}"#)))
        guard case .presence(let listing) = snapshot else { Issue.record("\(snapshot)"); return }
        #expect(listing.channelType == .stream && listing.truncated == true && listing.nextPage == "p2")
        #expect(listing.snapshot == [RosterMember(userId: "a", state: ["k": "v"]), RosterMember(userId: "b")])

        let interval = RollcallEvent(Event(try parsed(#"{"event":"presence","type":"interval","channel":"r","mode":"interval","seq":3,"interval":{"join":["c"],"stateChanged":[{"userId":"c","state":{"t":"1"}}],"joinInfo":{"c":{"role":"x"}}}}"#)))
        guard case .presence(let batch) = interval, let change = batch.interval else { Issue.record("\(interval)"); return }
        #expect(change.join == ["c"] && change.leave.isEmpty && change.timeout.isEmpty)
        #expect(change.stateChanged == [IntervalChange.StateChange(userId: "c", state: ["t": "1"])] && change.joinInfo?["c"] == ["role": "x"])

        let message = RollcallEvent(Event(try parsed(#"{"event":"message","channel":"room","publisher":"bob","message":{"text":"hi","n":[1,2.5]},"timestamp":7}"#)))
        #expect(message == .message(MessageEvent(channel: "room", publisher: "bob", message: ["text": "hi", "n": [1, .number(JSONNumber(literal: "2.5"))]], timestamp: 7)))

        let status = RollcallEvent(Event(try parsed(#"{"event":"userStatus","statuses":[{"userId":"bob","status":"online","customStatus":"Busy","platforms":["ios"],"lastUpdateTime":1,"lastOnlineStatusUpdateTime":2}]}"#)))
        #expect(status == .userStatus(UserStatusEvent(statuses: [StatusRecord(userId: "bob", status: .online, customStatus: "Busy", platforms: ["ios"], lastUpdateTime: 1, lastOnlineStatusUpdateTime: 2)])))

        let subscriptions = RollcallEvent(Event(try parsed(#"{"event":"subscriptions","added":["a"]}"#)))
        #expect(subscriptions == .subscriptions(SubscriptionsEvent(added: ["a"], removed: [])))

        let session = RollcallEvent(Event(try parsed(#"{"event":"session","type":"refreshRequired","expiresAt":99}"#)))
        #expect(session == .session(SessionEvent(type: .refreshRequired, expiresAt: 99)))
    }

    @Test("an unknown event is .other; a known one of the wrong shape is .other too, and decode(_:) says why")
    func unknownAndMalformed() throws {
        let future = Event(try parsed(#"{"event":"weather","sky":"blue"}"#))
        #expect(RollcallEvent(future) == .other(future))
        #expect(RollcallEvent(future).name == "weather")
        let broken = Event(try parsed(#"{"event":"presence","type":"join","channel":7}"#))
        #expect(RollcallEvent(broken) == .other(broken))
        #expect(throws: DecodingError.self) { try RollcallEvent.decode(broken) }
        let unknownType = Event(try parsed(#"{"event":"presence","type":"wave","channel":"r"}"#))
        #expect(RollcallEvent(unknownType) == .other(unknownType))
    }

    @Test("Codable through Foundation: encode then decode gives the same event, with the \"event\" member")
    func foundationRoundTrip() throws {
        let events: [RollcallEvent] = [
            .presence(PresenceEvent(type: .stateChanged, channel: "r", publisher: "a", state: ["k": "v"], occupancy: 1, mode: .interval, seq: 4)),
            .message(MessageEvent(channel: "r", channelType: .stream, publisher: "a", message: ["x": [true, .null, "s"]], timestamp: 3)),
            .userStatus(UserStatusEvent(statuses: [StatusRecord(userId: "a", status: .loggedOut)])),
            .subscriptions(SubscriptionsEvent(added: [], removed: ["b"])),
            .session(SessionEvent(type: .refreshRequired, expiresAt: 5)),
        ]
        for event in events {
            let data = try JSONEncoder().encode(event)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect(object?["event"] as? String == event.name)
            #expect(try JSONDecoder().decode(RollcallEvent.self, from: data) == event)
            // And the client's own path: the parser's tree, decoded without encoding it again.
            let tree = try JSONParser.parse(Array(data))
            #expect(RollcallEvent(Event(tree.objectValue!)) == event)
        }
    }

    @Test("typed results: login with its limits, a listing page, a status batch, a custom status, errors of shape")
    func typedResults() throws {
        let login = try Requests.Login.decode(JSONParser.parse(#"{"userId":"alice","platform":"web","sessionId":"s1","resumeToken":"t","serverTime":10,"resumed":true,"presenceTimeout":60,"limits":{"maxFrameBytes":65536,"requestsPerSecond":2.5,"heartbeatIntervalSeconds":0.4,"heartbeatTimeoutSeconds":1.2},"channels":[{"channel":"a","channelType":"stream"},{"channel":"b"}],"expiresAt":null,"messagesDropped":3}"#))
        #expect(login.resumed && login.sessionId == "s1" && login.messagesDropped == 3 && login.expiresAt == nil)
        #expect(login.channels == [ChannelRef("a", type: .stream), ChannelRef("b")])
        #expect(login.limits.requestsPerSecond == 2.5 && login.limits.livenessInterval == 0.4 && login.limits.livenessTimeout == 1.2)
        let old = try Requests.Login.decode(JSONParser.parse(#"{"userId":"a","sessionId":"s","resumeToken":"t","serverTime":1,"resumed":false}"#))
        #expect(old.limits.livenessInterval == 10 && old.limits.livenessTimeout == 30, "a broker before 1.2: the defaults")

        let page = try Requests.GetOnlineUsers.decode(JSONParser.parse(#"{"totalOccupancy":2,"seq":8,"users":[{"userId":"a","state":{"k":"v"},"info":{"n":1}},{"userId":"b"}],"nextPage":null}"#))
        #expect(page.userIds == ["a", "b"] && page.seq == 8 && page.nextPage == nil && page.users[0].info == ["n": 1])

        let batch = try Requests.GetUserStatus.decode(JSONParser.parse(#"{"statuses":[{"userId":"b","status":"offline","platforms":[]}],"failed":[{"userId":"","code":"INVALID_ARGUMENT"}]}"#))
        #expect(batch.statuses.map(\.status) == [.offline] && batch.failed.first?.errorCode == .invalidArgument)

        let custom = try Requests.SetCustomStatus.decode(JSONParser.parse(#"{"status":{"userId":"a","status":"online","customStatus":"Busy","platforms":["web"]}}"#))
        #expect(custom.customStatus == "Busy")
        let state = try Requests.SetState.decode(JSONParser.parse(#"{"state":{},"pending":true}"#))
        #expect(state.pending && state.state.isEmpty)
        #expect(throws: DecodingError.self) { try Requests.Join.decode(JSONParser.parse(#"{"mode":"announce"}"#)) }
    }

    @Test("the roster takes typed events and parsed ones alike")
    func rosterTakesTypedEvents() {
        var typed = Roster(ChannelRef("room"))
        var parsedRoster = Roster(channel: "room")
        let events: [PresenceEvent] = [
            PresenceEvent(type: .snapshot, channel: "room", occupancy: 1, seq: 1, snapshot: [RosterMember(userId: "me")]),
            PresenceEvent(type: .join, channel: "room", publisher: "b", state: ["k": "1"], seq: 2),
            PresenceEvent(type: .stateChanged, channel: "room", publisher: "b", state: ["k": "2"], seq: 3),
        ]
        for event in events {
            #expect(typed.apply(event) == .applied)
            let data = try! JSONEncoder().encode(RollcallEvent.presence(event))
            parsedRoster.apply(Event(try! JSONParser.parse(Array(data)).objectValue!))
        }
        #expect(typed.sortedMembers == parsedRoster.sortedMembers)
        #expect(typed.members["b"]?.state == ["k": "2"] && typed.seq == 3)
        #expect(typed.apply(PresenceEvent(type: .join, channel: "other", publisher: "x", seq: 4)) == .ignored)
    }
}

@Suite struct OpenVocabularyTests {
    @Test("an open vocabulary word codes as its bare string, and a word this client does not know still decodes")
    func codesAsItsString() throws {
        let encoded = try JSONEncoder().encode([ChannelType.stream, ChannelType(rawValue: "future")])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["stream","future"]"#)
        let decoded = try JSONDecoder().decode([PresenceMode].self, from: Data(#"["interval","later"]"#.utf8))
        #expect(decoded == [.interval, PresenceMode(rawValue: "later")])
        #expect("\(UserStatus.loggedOut)" == "loggedOut")
    }
}
