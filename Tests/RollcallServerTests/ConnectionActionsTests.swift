@testable import RollcallServer
import Testing

@Suite("ConnectionActions")
struct ConnectionActionsTests {
    @Test func holdsUpToFourActionsInOrder() {
        #expect(Array(ConnectionActions.none) == [])
        #expect(ConnectionActions.none.isEmpty)
        #expect(Array(ConnectionActions(.requestWritable)) == [.requestWritable])
        let four = ConnectionActions(.discardBuffers, .setTimeout(seconds: 10), .requestWritable, .hangUp)
        #expect(four.count == 4)
        #expect(Array(four) == [.discardBuffers, .setTimeout(seconds: 10), .requestWritable, .hangUp])
        #expect(four.contains(.hangUp))
    }
}
