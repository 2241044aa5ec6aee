@testable import RollcallServer
import RollcallCore
import Testing

/// The HTTP exchanges' bookkeeping: server API requests waiting for the core, a client that
/// hung up first, and telling a pipelined request by the bytes read.
@Suite("HTTPExchanges")
struct HTTPExchangesTests {
    private let wsi = OpaquePointer(bitPattern: 0x2000)!
    private let other = OpaquePointer(bitPattern: 0x3000)!

    @Test func anAPIAnswerGoesToTheExchangeThatWaitsForIt() {
        var exchanges = HTTPExchanges()
        let first = exchanges.handOff(key: 7, wsi: wsi)
        let second = exchanges.handOff(key: 8, wsi: other)
        #expect(first != second)
        #expect(exchanges.pendingAPIRequests == 2)
        #expect(exchanges.answer(second, with: .text(200, "b")) == other)
        guard case .answering(let response)? = exchanges[8] else {
            Issue.record("exchange 8 does not answer")
            return
        }
        #expect(response.status == 200)
        guard case .awaitingAnswer(first)? = exchanges[7] else {
            Issue.record("exchange 7 stopped waiting")
            return
        }
        #expect(exchanges.answer(second, with: .text(200, "again")) == nil)  // answered once
        #expect(exchanges.pendingAPIRequests == 1)
    }

    @Test func anAnswerForAClientThatHungUpIsDropped() {
        var exchanges = HTTPExchanges()
        let id = exchanges.handOff(key: 3, wsi: wsi)
        exchanges.connectionClosed(key: 3)
        #expect(exchanges[3] == nil)
        #expect(exchanges.pendingAPIRequests == 0)
        #expect(exchanges.answer(id, with: .text(200, "late")) == nil)
    }

    @Test func anAnswerForAnExchangeThatMovedOnIsDropped() {
        var exchanges = HTTPExchanges()
        let id = exchanges.handOff(key: 4, wsi: wsi)
        exchanges[4] = .discardingBody
        #expect(exchanges.answer(id, with: .text(200, "x")) == nil)
        guard case .discardingBody? = exchanges[4] else {
            Issue.record("the exchange was replaced")
            return
        }
    }

    @Test func aRequestReadBeforeTheLastAnswerIsPipelined() {
        var exchanges = HTTPExchanges()
        #expect(!exchanges.isPipelined(wsi, bytesRead: 0))  // the first request of a connection
        exchanges.transactionCompleted(wsi, bytesRead: 120)
        #expect(exchanges.isPipelined(wsi, bytesRead: 120))
        #expect(!exchanges.isPipelined(wsi, bytesRead: 180))
        #expect(!exchanges.isPipelined(other, bytesRead: 120))
        exchanges.transactionCompleted(other, bytesRead: -1)  // lws could not say
        #expect(!exchanges.isPipelined(other, bytesRead: -1))
        exchanges.socketDestroyed(wsi)
        #expect(!exchanges.isPipelined(wsi, bytesRead: 120))
    }
}
