import Testing
@testable import RollcallRedisEngine

/// A script's arguments are named once, in its parameter list: the prologue reads them by
/// those names, and a call lays them out in the same order.
@Suite struct LuaScriptTests {
    private let script = LuaScript("test.script", parameters: [.text("prefix"), .number("limit"), .text("user")], rest: "usersFrom",
                                   body: "return usersFrom\n")

    @Test func thePrologueReadsEachParameterIntoALocalOfItsName() {
        #expect(script.source == """
            local prefix = ARGV[1]
            local limit = tonumber(ARGV[2])
            local user = ARGV[3]
            local usersFrom = 4
            return usersFrom

            """)
    }

    @Test func aCallLaysOutItsNamedGroupsInOrderThenTheRest() {
        let arguments = script.arguments(["prefix": "rc:", "limit": 20], ["user": "ann"], rest: [Array("bob".utf8)])
        #expect(arguments.map { String(decoding: $0, as: UTF8.self) } == ["rc:", "20", "ann", "bob"])
    }

    @Test func keysGoToKEYSInTheirOrderAndComeFirstInACall() {
        let keyed = LuaScript("test.keys", parameters: [.text("user"), .key("channel"), .number("limit"), .key("members")],
                              rest: "usersFrom", body: "return usersFrom\n")
        #expect(keyed.source == """
            local user = ARGV[1]
            local channel = KEYS[1]
            local limit = tonumber(ARGV[2])
            local members = KEYS[2]
            local usersFrom = 3
            return usersFrom

            """)
        #expect(keyed.store.keyCount == 2)
        let arguments = keyed.arguments(["user": "ann", "channel": "P{c:m:1:a}", "limit": 5, "members": "P{c:m:1:a}:m"],
                                        rest: [Array("bob".utf8)])
        #expect(arguments.map { String(decoding: $0, as: UTF8.self) } == ["P{c:m:1:a}", "P{c:m:1:a}:m", "ann", "5", "bob"])
        #expect(script.store.keyCount == 0, "a script with no key parameter declares none")
    }

    @Test func flagsAndBytesPassAsRedisReceivesThem() {
        let flags = LuaScript("test.flags", parameters: [.text("on"), .text("off"), .text("raw")], body: "")
        let arguments = flags.arguments(["on": true, "off": false, "raw": [UInt8]([0, 255])])
        #expect(arguments == [[UInt8(ascii: "1")], [UInt8(ascii: "0")], [0, 255]])
    }

    /// Every script of the Redis engine.
    static let everyEngineScript: [LuaScript] = [
            PresenceScripts.join, PresenceScripts.leave, PresenceScripts.setState, PresenceScripts.flush, PresenceScripts.publish,
            PresenceScripts.onlineUsers, PresenceScripts.readExpiries, PresenceScripts.snapshot, PresenceScripts.overdueExpiries,
            PresenceScripts.overdueFlushes, SessionScripts.start, SessionScripts.hold, SessionScripts.keepHeard, SessionScripts.claim, SessionScripts.cancelClaim,
            SessionScripts.cancelStart, SessionScripts.end, SessionScripts.declareDead, SessionScripts.reapGroup, SessionScripts.refenced, SessionScripts.reaped, SessionScripts.handOver, UserStatusScripts.started, UserStatusScripts.resumed,
            UserStatusScripts.ended, UserStatusScripts.setCustomStatus, UserStatusScripts.records, UserStatusScripts.subscribe,
            UserStatusScripts.unsubscribe, UserStatusScripts.subscriptions, UserStatusScripts.resync, UserStatusScripts.sweep,
            UserStatusScripts.changedSince, UserStatusScripts.admit, UserStatusScripts.subscribeAdmitted, UserStatusScripts.dropSubscriber,
            ServerAPIScripts.channels, ServerAPIScripts.info, ServerAPIScripts.groupSessions, ServerAPIScripts.sessionsOfUser, ClusterStartCheck.register,
            NodeHeartbeat.beat, NodeHeartbeat.revive, GroupBeat.script, GroupBeat.renew, WebhookStreamScripts.take, WebhookStreamScripts.settle, WebhookStreamScripts.touch,
            PresenceScripts.userSide, PresenceScripts.refence,
        ]

    @Test func everyEngineScriptNamesEachParameterOnce() {
        let scripts = Self.everyEngineScript
        #expect(Set(scripts.map(\.store.name)).count == scripts.count)
        for script in scripts {
            let names = script.parameters.map(\.name) + (script.rest.map { [$0] } ?? [])
            #expect(Set(names).count == names.count, "\(script.store.name) names a parameter twice")
            let afterPrologue = script.source.dropFirst(LuaScript.prologue(script.parameters, rest: script.rest).count)
            let byPosition = afterPrologue.contains(try! Regex("ARGV\\[[0-9]"))
            #expect(!byPosition, "\(script.store.name) reads an argument by its position")
        }
    }
}
