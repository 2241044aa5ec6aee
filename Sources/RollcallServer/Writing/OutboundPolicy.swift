import RollcallCore

/// Where a connection's output goes once the core queued an object for it, and when the
/// connection is a slow consumer (docs/transport.md, "What counts toward maxOutboundBytes").
///
/// Only bytes the socket has not taken count toward `limits.maxOutboundBytes`: what is queued
/// while the socket refuses more (its buffer is full, or lws still holds the tail of an earlier
/// frame). Bytes the broker holds back on purpose — a busy connection's events gathered by the
/// coalescing window, everything one event produced before it is written — never make a reader
/// look slow. What the broker may hold back is bounded instead: once a full frame
/// (`limits.maxBatchBytes`) is waiting, it is written without waiting for the window, so a
/// single object of that size or larger never waits at all.
///
/// Pure: the caller answers the two questions it cannot (is the socket refusing bytes, is the
/// connection busy) only when the answer matters, and carries out the placement.
struct OutboundPolicy: Sendable, Equatable {
    /// `limits.maxOutboundBytes`: the most bytes a socket may leave untaken.
    let maxOutboundBytes: Int
    /// `limits.maxBatchBytes`: a full frame, written without waiting.
    let maxBatchBytes: Int

    /// What to do with a connection after an object was appended to its queue.
    enum Placement: Equatable, Sendable {
        /// Write it once the actions of the current event are applied: the connection is quiet,
        /// or a full frame is waiting.
        case writeAfterEvent
        /// Write it at the end of the loop turn: a busy connection whose client waits for it.
        case writeAtEndOfTurn
        /// Hold it for the coalescing window: a busy connection, nobody waiting.
        case holdForWindow
        /// Nothing to arrange: it is already due (held, scheduled, or waiting for the socket).
        case alreadyDue
        /// The socket refuses bytes and what it left untaken passed `maxOutboundBytes`.
        case cutSlowConsumer
    }

    /// The placement after an append took the queue from `queuedBefore` to `queuedAfter` bytes.
    /// `socketRefusesBytes` is asked only when the queue is over the limit; `isBusy` only when
    /// the queue was empty and holds less than a full frame; `isAwaited` says a client waits
    /// for this output (a reply, or the output of its own request).
    func placement(queuedBefore: Int, queuedAfter: Int, socketRefusesBytes: () -> Bool,
                   isBusy: () -> Bool, isAwaited: Bool) -> Placement {
        if queuedAfter > maxOutboundBytes && socketRefusesBytes() { return .cutSlowConsumer }
        let fullFrameNow = queuedBefore < maxBatchBytes && queuedAfter >= maxBatchBytes
        if queuedBefore == 0 {
            if fullFrameNow || !isBusy() { return .writeAfterEvent }
            return isAwaited ? .writeAtEndOfTurn : .holdForWindow
        }
        if fullFrameNow { return .writeAfterEvent }
        return isAwaited ? .writeAtEndOfTurn : .alreadyDue
    }

    /// True when a write that stopped because the socket refused more left `unsentBytes` queued
    /// beyond what the socket may leave untaken.
    func isSlowConsumer(afterRefusedWriteLeaving unsentBytes: Int) -> Bool {
        unsentBytes > maxOutboundBytes
    }
}

extension BrokerServer {
    /// The slow-consumer rule and frame bound of this broker's limits.
    var outboundPolicy: OutboundPolicy {
        OutboundPolicy(maxOutboundBytes: configuration.limits.maxOutboundBytes,
                       maxBatchBytes: configuration.limits.maxBatchBytes)
    }
}
