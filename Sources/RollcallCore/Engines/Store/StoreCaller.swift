/// How a cluster engine asks the store for something: ``Broker`` appends an
/// ``Action/store(_:_:_:)`` and keeps `then` until the matching ``InboundEvent/storeReplied(_:_:)``.
package protocol StoreCaller: AnyObject {
    /// Runs `commands` on the store; `then` gets one reply per command, or the failure.
    /// `priority`: whether a client waits on it or it is the node's upkeep.
    func call(_ commands: [StoreCommand], priority: StoreCallPriority, then: @escaping (Result<[StoreReply], StoreFailure>) -> Void)
    /// Starts hearing a pub/sub channel.
    func listen(_ channel: String)
    /// Stops hearing a pub/sub channel.
    func unlisten(_ channel: String)
}

extension StoreCaller {
    /// Runs `commands` for a request (``StoreCallPriority/request``).
    package func call(_ commands: [StoreCommand], then: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        call(commands, priority: .request, then: then)
    }
}

extension StoreReply {
    /// The reply of a presence script: its first element names the outcome (`ok`, `retry`, …).
    package var outcome: String? { elements?.first?.text }

    /// Element `index` of an array reply.
    package subscript(index: Int) -> StoreReply {
        guard let elements, index < elements.count else { return .null }
        return elements[index]
    }
}

extension Array where Element == UInt8 {
    package init(_ text: String) { self = Array(text.utf8) }
}

/// One argument of a store command.
package func storeArgument(_ text: String) -> [UInt8] { Array(text.utf8) }
