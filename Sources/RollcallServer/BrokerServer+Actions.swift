import CRollcallShim
import RollcallCore
import RollcallProtocol

extension BrokerServer {
    /// Hands `event` to the broker and carries out its actions. Events the transport
    /// generates while applying actions (a slow consumer found while queueing) are queued and
    /// fed after the current action list is applied: the broker is never re-entered. Once
    /// every action is applied, the quiet connections that got output are written at once
    /// (``writeDirectly(_:)``), so everything one event produced for a connection shares a frame.
    func feed(_ event: InboundEvent) {
        guard loop.phase != .stopped else { return }
        feeding.pending.append(event)
        guard !feeding.isFeeding else { return }
        feeding.isFeeding = true
        var index = 0
        while index < feeding.pending.count {
            let next = feeding.pending[index]
            index += 1
            if case .received(let connection, _) = next { feeding.requester = connection } else { feeding.requester = nil }
            apply(broker.handle(next))
            feeding.requester = nil
            if index == feeding.pending.count {
                // Webhook events are durable (storage.path) before any client can see their change.
                services.webhookSender?.commitStored()
                writeDirectWrites()
            }
        }
        feeding.pending.removeAll(keepingCapacity: true)
        feeding.isFeeding = false
        armTimer()
    }

    /// Writes the connections queued for a direct write. Anything fed meanwhile (through
    /// ``carryOut(_:for:)``) is applied by the loop in ``feed(_:)``, and its output written after it.
    ///
    /// Sends first, bookkeeping after: a connection whose queue is one object (a broadcast's
    /// recipient) gets its frame in a first pass that does nothing else, and the queue,
    /// metrics and busy stamps of all of them are settled in a second pass, so the last
    /// recipient of a broadcast does not wait for the bookkeeping of the others
    /// (BENCHMARKS.md, Issue 16 §4, session 8). With ``BatchedSends`` the first pass gathers
    /// those frames and sends them in one submission (session 10). Any other connection is
    /// written as before.
    private func writeDirectWrites() {
        guard !output.directWrites.isEmpty else { return }
        var due: [ConnectionRecord] = []
        swap(&due, &output.directWrites)
        var sentAlone: [ConnectionRecord] = []
        swap(&sentAlone, &output.sentAloneScratch)
        // The records themselves, not ids to look up again (a hash lookup per recipient of a
        // broadcast). One whose socket lws closed meanwhile is skipped: its wsi is gone.
        for record in due where record.lifecycle.state != .closed {
            if let batchedSends = output.batchedSends, let object = loneObjectToWriteDirectly(record) {
                batchedSends.add(record, object: object, socket: lws_get_socket_fd(record.wsi))
                if batchedSends.isFull { sendBatched(batchedSends) { sentAlone.append($0) } }
                continue
            }
            switch sendAlone(record) {
            case .sent: sentAlone.append(record)
            case .notAlone: writeDirectly(record)
            case .failed: break
            }
        }
        if let batchedSends = output.batchedSends, !batchedSends.isEmpty { sendBatched(batchedSends) { sentAlone.append($0) } }
        settleSentAlone(sentAlone)
        sentAlone.removeAll(keepingCapacity: true)
        swap(&sentAlone, &output.sentAloneScratch)
        due.removeAll(keepingCapacity: true)
        if output.directWrites.isEmpty { swap(&due, &output.directWrites) }
    }

    private func apply(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .send(let connection, let bytes, let kind):
                enqueue(bytes, for: connection, awaited: kind == .reply)
            case .close(let connection, let code, let reason):
                guard let record = records[connection] else { continue }
                perform(record.lifecycle.coreClosed(code, reason: reason), for: record)
            case .store, .listen, .unlisten:
                services.clusterLink?.perform(action)
            case .notifyBackend(let event):
                services.webhookSender?.enqueue(event)
            case .respond(let id, let status, let body):
                answerAPIRequest(id, status: status, body: body)
            }
        }
    }

    /// Queues one object for a connection and places it (``OutboundPolicy``): a quiet
    /// connection is written once the current action list is applied (``writeDirectly(_:)``),
    /// a busy one at the coalescing flush (``WriteCoalescer``) — unless a client waits for it
    /// (the connection whose request is being handled, or any reply: one that needed Redis
    /// comes back as `.storeReplied`, not as the request), which is written at the end of the
    /// loop turn with whatever was held for it (replies to requests it pipelined in one read
    /// still share a frame), or a full frame (`limits.maxBatchBytes`) is waiting, which is
    /// written at once. The connection is cut as a slow consumer only when its socket refuses
    /// bytes and what it left untaken is over `limits.maxOutboundBytes`.
    private func enqueue(_ bytes: [UInt8], for connection: ConnectionID, awaited: Bool) {
        guard let record = records[connection], record.lifecycle.acceptsOutput else { return }
        let queuedBefore = record.outbound.byteCount
        record.outbound.append(bytes)
        let placement = output.policy.placement(
            queuedBefore: queuedBefore, queuedAfter: record.outbound.byteCount,
            socketRefusesBytes: { socketRefusesBytes(record) },
            isBusy: { output.coalescer?.isBusy(lastFrameAt: record.lastFrameAt) ?? false },
            isAwaited: awaited || connection == feeding.requester)
        switch placement {
        case .writeAfterEvent: output.directWrites.append(record)
        case .writeAtEndOfTurn: output.coalescer?.writeAtEndOfTurn(record.id)
        case .holdForWindow:
            metrics.writesCoalesced += 1
            output.coalescer?.hold(record.id)
        case .alreadyDue: break
        case .cutSlowConsumer: cutSlowConsumer(record)
        }
    }

    /// True when the socket is not taking bytes now: lws holds the unsent tail of a frame, or
    /// the kernel's send buffer has no room (`lws_send_pipe_choked`: a `poll`, so asked only
    /// when a queue is over the limit).
    func socketRefusesBytes(_ record: ConnectionRecord) -> Bool {
        lws_partial_buffered(record.wsi) != 0 || lws_send_pipe_choked(record.wsi) != 0
    }

    /// Drops the queue, tells the core (abnormal end: the session is held), and tries to send
    /// close 1013; the close timeout kills the socket if the peer is not reading at all.
    func cutSlowConsumer(_ record: ConnectionRecord) {
        logger.notice("slow consumer cut", metadata: [
            "connection": "\(record.id)", "queuedBytes": "\(record.outbound.byteCount)",
        ])
        metrics.slowConsumerCuts += 1
        perform(record.lifecycle.slowConsumerCut(), for: record)
    }
}

extension BrokerServer {
    /// The coalescer releases connections at the end of a loop turn (those held until their
    /// window ended, or a busy requester waiting for its reply): each is written now if it is
    /// still open and has something queued (a ping, a close or a reply may have written it
    /// meanwhile), or its writable callback is asked for where a direct write is not safe.
    /// Writing here saves the callback's two `epoll_ctl` calls and its loop turn per frame
    /// (BENCHMARKS.md, Issue 16 §1c). With batched sends, the queues that fit one frame, on
    /// connections safe to write directly, go out in submissions of up to a full batch
    /// (``addWholeQueue(of:to:)``, ``BatchedSends/isFull``); any other is written by
    /// ``writeDirectly(_:)``.
    func flushHeld(_ ids: [ConnectionID]) {
        for id in ids {
            guard let record = records[id], !record.outbound.isEmpty else { continue }
            if let batchedSends = output.batchedSends, addWholeQueue(of: record, to: batchedSends) {
                if batchedSends.isFull { sendBatched(batchedSends) { _ in } }
                continue
            }
            writeDirectly(record)
        }
        if let batchedSends = output.batchedSends, !batchedSends.isEmpty { sendBatched(batchedSends) { _ in } }
    }
}
