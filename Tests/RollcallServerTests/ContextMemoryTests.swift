@testable import RollcallServer
import CRollcallShim
import Testing

/// The C memory an lws context reads: copies that stay put, a zeroed protocol list.
@Suite("ContextMemory")
struct ContextMemoryTests {
    @Test func stringsAreCopiesThatLiveWithTheMemory() {
        let memory = ContextMemory()
        let copy = memory.cString("rollcall.v1")
        #expect(String(cString: copy) == "rollcall.v1")
        #expect(memory.cString("a") != memory.cString("a"))  // one copy per call
    }

    @Test func theProtocolListAndIdlePolicyStartZeroed() {
        let memory = ContextMemory()
        let list = memory.protocols(count: 2)
        #expect(list[0].name == nil && list[1].name == nil)
        #expect(list[1].callback == nil)  // the terminator lws looks for
        let policy = memory.noIdlePolicy()
        #expect(policy.pointee.secs_since_valid_ping == 0 && policy.pointee.secs_since_valid_hangup == 0)
    }
}
