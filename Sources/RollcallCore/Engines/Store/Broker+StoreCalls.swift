import RollcallProtocol

/// Cluster mode in the broker: the store the Redis engines call (``StoreCaller``); their
/// completions answer the request later, in order (docs/cluster.md, "The core stays pure").
extension Broker: StoreCaller {
    package func call(_ commands: [StoreCommand], priority: StoreCallPriority,
                      then: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        nextStoreTicket += 1
        let ticket = StoreTicket(nextStoreTicket)
        storeCalls[ticket] = then
        outbox.actions.append(.store(ticket, commands, priority))
    }

    /// True while a store call waits for its replies (shutdown lets the hand-over finish).
    public var awaitsStore: Bool { !storeCalls.isEmpty }

    package func listen(_ channel: String) { outbox.actions.append(.listen(Array(channel.utf8))) }

    package func unlisten(_ channel: String) { outbox.actions.append(.unlisten(Array(channel.utf8))) }
}
