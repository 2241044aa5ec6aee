import RollcallCore
import RollcallProtocol

/// This node's side of cluster presence: which local sessions are in which channel, the
/// events that come from Redis pub/sub, snapshots, gaps, and the interval flushes it runs.
extension ClusterPresence {
    // MARK: - Local sessions

    /// The local view of `key`, created (and heard) on first use.
    func localChannel(_ key: ChannelKey) -> LocalChannel {
        if let channel = local[key] { return channel }
        let channel = LocalChannel()
        local[key] = channel
        store.listen(keys.channel(key).events)
        return channel
    }

    /// Forgets a local channel with no local session left, and stops hearing it.
    func forgetIfEmpty(_ key: ChannelKey) {
        guard let channel = local[key], channel.members.isEmpty else { return }
        local[key] = nil
        store.unlisten(keys.channel(key).events)
        hearingDeadlines.cancel(key)
        for step in channel.untilHeard { step() }
        channel.untilHeard.removeAll()
    }

    // MARK: - Hearing a channel before reading it

    /// How long a step waits for the channel's subscription before it goes on regardless (ms):
    /// the pub/sub link may be down, and then its return resyncs every channel.
    static let hearingWaitMs: Timestamp = 1000

    /// Runs `step` (a first join's script, a snapshot read) once Redis confirmed this node's
    /// subscription of `key`'s events, at once when it already did (or the channel is not
    /// local). A step that ran before would read a `seq` whose next events may be published
    /// before the subscription is in place: they never arrive, and the local sessions' roster
    /// stays stale until another event shows the gap (docs/cluster.md, "Hearing a channel
    /// before joining it"). Waits at most ``hearingWaitMs``.
    func whenHeard(_ key: ChannelKey, _ step: @escaping () -> Void) {
        guard let channel = local[key], !channel.isHeard else { return step() }
        channel.untilHeard.append(step)
        if channel.untilHeard.count == 1 { hearingDeadlines.schedule(key, at: clock.monotonic + Self.hearingWaitMs) }
    }

    /// Redis confirmed this node's subscription of `channels`: their waiting steps go on.
    func heard(_ channels: [[UInt8]]) {
        for name in channels {
            guard let key = keys.channel(fromEvents: name), let channel = local[key] else { continue }
            channel.isHeard = true
            runStepsUntilHeard(of: key, channel)
        }
    }

    /// The steps that waited ``hearingWaitMs`` for their channel's subscription go on, and
    /// later ones do not wait: the pub/sub link is down or slow, and when it is back it
    /// resubscribes every channel and compares their `seq`s (``resyncEverything()``).
    func fireDueHearingDeadlines() {
        for key in hearingDeadlines.popDue(now: clock.monotonic) {
            guard let channel = local[key] else { continue }
            channel.isHeard = true
            runStepsUntilHeard(of: key, channel)
        }
    }

    private func runStepsUntilHeard(of key: ChannelKey, _ channel: LocalChannel) {
        hearingDeadlines.cancel(key)
        let steps = channel.untilHeard
        channel.untilHeard.removeAll()
        for step in steps { step() }
    }

    /// Takes a session out of the local view of a channel.
    func removeLocally(_ session: Session, from key: ChannelKey) {
        session.presence.joined[key] = nil
        guard let channel = local[key] else { return }
        if let member = channel.members.removeValue(forKey: session.number), member.flags.presence, member.baseline == nil {
            channel.waiting -= 1
        }
        channel.messagesAwaitingJoin[session.number] = nil
        if channel.waiting == 0 { channel.recent.removeAll() }
        forgetIfEmpty(key)
    }

    // MARK: - Events from Redis

    /// A message on a channel's pub/sub channel: a presence event (`P<seq>\n<subject>\n…`)
    /// or a message event (`N<number>\n<session>\n<kept>\n…`; `M<session>\n<kept>\n…`
    /// from a node before 1.2, unnumbered).
    func deliver(channel name: [UInt8], payload: [UInt8]) {
        guard let key = keys.channel(fromEvents: name), let channel = local[key], let kind = payload.first else { return }
        func fields(_ count: Int) -> [ArraySlice<UInt8>]? {
            let fields = payload.split(separator: UInt8(ascii: "\n"), maxSplits: count - 1, omittingEmptySubsequences: false)
            return fields.count == count ? fields : nil
        }
        switch kind {
        case UInt8(ascii: "P"):
            guard let fields = fields(3), let seq = Int(String(decoding: fields[0].dropFirst(), as: UTF8.self)) else { return }
            let subject = fields[1].isEmpty ? nil : Name(unchecked: String(decoding: fields[1], as: UTF8.self))
            receive(LocalChannel.Event(seq: seq, subject: subject, bytes: Array(fields[2])), in: channel, key: key)
        case UInt8(ascii: "N"):
            guard let fields = fields(4), let number = Int(String(decoding: fields[0].dropFirst(), as: UTF8.self)) else { return }
            deliverMessage(Array(fields[3]), number: number, publisher: fields[1], kept: fields[2], in: channel)
        case UInt8(ascii: "M"):
            guard let fields = fields(3) else { return }
            deliverMessage(Array(fields[2]), number: nil, publisher: fields[0].dropFirst(), kept: fields[1], in: channel)
        default:
            return
        }
    }

    /// A message event to the local members that should get it. `number` is the channel's
    /// message number (`mq`): a member that joined or was resumed here after it was published
    /// does not get it (its pub/sub delivery can come after the join's or the claim's answer
    /// on the command link: chaos seeds 37108521913684, 153618922795287, 80820037631616), and
    /// a member whose first join is being answered keeps it until the answer says.
    private func deliverMessage(_ bytes: [UInt8], number: Int?, publisher publisherBytes: ArraySlice<UInt8>,
                                kept keptBytes: ArraySlice<UInt8>, in channel: LocalChannel) {
        let publisher = String(decoding: publisherBytes, as: UTF8.self)
        if let number, number > 0, channel.isRepeat(number: number, publisher: publisher) {
            broker.metrics.clusterRepeatedMessagesDropped += 1
            return
        }
        // The event names the held sessions Redis kept it for (or counted as dropped): they
        // get it, or its count, at their resume on any node — one that has resumed here
        // since got it with its resume. A session it does not name was live in Redis when
        // it was published: a live one gets it now; one held here whose hold had not run
        // in Redis yet keeps it here, until the hold's `held` message hands it to Redis.
        let keptInStore = keptBytes.isEmpty ? [] : Set(keptBytes.split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) })
        // A session resumed here whose snapshots are still being read gets it after the
        // messages Redis kept for it (``messagesAfterSnapshots``).
        let heldLimit = configuration.limits.heldMessageBytes
        let someAreCatchingUp = !messagesAfterSnapshots.isEmpty
        let someAreJoining = !channel.messagesAwaitingJoin.isEmpty
        outbox.fanOut {
            for member in channel.members.values
            where member.flags.messages && member.session.sessionId != publisher && !keptInStore.contains(member.session.sessionId) {
                if let number {
                    guard number > member.messagesBefore else { continue }
                    if someAreJoining, let waiting = channel.messagesAwaitingJoin[member.session.number] {
                        // A round trip; bounded all the same, as for a claim.
                        if waiting.count < Self.maxMessagesAwaitingAClaim {
                            channel.messagesAwaitingJoin[member.session.number]!.append((number, bytes))
                        }
                        continue
                    }
                }
                if someAreCatchingUp, let waiting = messagesAfterSnapshots[member.session.number] {
                    // A held session waits for a claim's answer: a round trip. Its `adopted`
                    // may be lost (the subscriber reconnected), so what it keeps is bounded.
                    if member.session.connection != nil || waiting.count < Self.maxMessagesAwaitingAClaim {
                        messagesAfterSnapshots[member.session.number]!.append(bytes)
                    }
                } else {
                    outbox.sendMessage(bytes, to: member.session, heldLimit: heldLimit)
                }
            }
        }
    }

    /// A first join was answered: messages numbered up to `number` were published before it;
    /// those that came meanwhile and are later go out now, in order. (A second join sent
    /// before the first was answered changes nothing here.)
    func joinAnswered(_ session: Session, in key: ChannelKey, messageNumber number: Int) {
        guard let channel = local[key], channel.members[session.number] != nil,
              let waiting = channel.messagesAwaitingJoin.removeValue(forKey: session.number) else { return }
        channel.members[session.number]?.messagesBefore = number
        let heldLimit = configuration.limits.heldMessageBytes
        for message in waiting where message.number > number {
            outbox.sendMessage(message.bytes, to: session, heldLimit: heldLimit)
        }
    }

    /// A session resumed here by a claim: per channel, the messages numbered up to what the
    /// claim saw reached it on its old node or come with the resume.
    func messagesSeenBeforeResume(_ session: Session, _ numbers: [ChannelKey: Int]) {
        for (key, number) in numbers {
            guard let channel = local[key], let before = channel.members[session.number]?.messagesBefore else { continue }
            channel.members[session.number]?.messagesBefore = max(before, number)
        }
    }

    /// A presence event in `seq` order: delivered, dropped as old, or the start of a re-read.
    private func receive(_ event: LocalChannel.Event, in channel: LocalChannel, key: ChannelKey) {
        guard let delivered = channel.delivered else {
            channel.keep(event)
            return
        }
        guard event.seq > delivered else {
            // The `seq` this node delivered last, with other bytes: Redis went back in time
            // (a failover lost the event it delivered, too short a loss for the epoch to be
            // renewed) and the new timeline used the number again. The rosters here followed
            // the lost event: every session gets a fresh snapshot (chaos seed 22843738030636).
            if event.seq == delivered, let last = channel.lastEventBytes, last != event.bytes {
                broker.metrics.clusterEventsRewritten += 1
                resync(key)
            }
            return
        }
        guard event.seq == delivered + 1 else {
            channel.keep(event)
            resync(key)
            return
        }
        channel.delivered = event.seq
        channel.lastEventBytes = event.bytes
        channel.remember(event)
        // A loop over concrete types: the core's generic `broadcast(_:to:)` is not specialized
        // across the module boundary and looked up metadata at run time for every event.
        outbox.fanOut {
            for member in channel.members.values
            where member.flags.presence && (member.baseline.map { $0 < event.seq } ?? false) && member.session.userId != event.subject {
                outbox.send(event.bytes, to: member.session)
            }
        }
    }

    /// Delivers the events that waited for a snapshot (in order, while they follow on).
    func drain(_ key: ChannelKey) {
        guard let channel = local[key], let delivered = channel.delivered else { return }
        let waiting = channel.recent.filter { $0.seq > delivered }.sorted { $0.seq < $1.seq }
        channel.recent.removeAll { $0.seq > delivered }
        for event in waiting {
            receive(event, in: channel, key: key)
            if channel.delivered == nil { break }
        }
        if channel.waiting == 0, channel.delivered != nil { channel.recent.removeAll() }
    }

    // MARK: - Snapshots

    /// The snapshot frames for `viewer` (and the events it missed since), from `roster`, the
    /// roster as of `seq` (``PresenceScripts`` `rosterAtLastEvent`), and the viewer's own entry
    /// when it joined since that event (`own[2]`, `own[3]`: state and info, empty: none); marks
    /// the viewer as having seen up to `seq`.
    func snapshotFrames(of key: ChannelKey, viewer: Session, seq: Int, mode: String?, roster: LocalChannel.Roster, own: StoreReply,
                        in channel: LocalChannel) -> [[UInt8]] {
        let limit = max(1, configuration.presence.snapshotMaxMembers)
        let total = roster.total
        var insert: RosterPage.EncodedEntry?
        if let stored = own[2].bytes, !stored.isEmpty, let state = PresenceState(stored: stored) {
            insert = RosterPage.EncodedEntry((viewer.userId, state, own[3].bytes.flatMap { $0.isEmpty ? nil : $0 }), includeState: true)
        }
        let array = roster.page.array(inserting: insert, limit: limit)
        let nextPage = array.more ? array.last.map { PageCursor.encode(after: $0) } : nil
        var frames = [PresenceEvents.snapshot(
            channel: key, encodedMembers: array.bytes, nextPage: nextPage, occupancy: total + (insert == nil ? 0 : 1),
            mode: PresenceMode(rawValue: mode ?? "") ?? .announce, seq: seq, timestamp: clock.now)]
        if channel.delivered == nil {
            channel.delivered = seq
            channel.lastEventBytes = nil
        }
        channel.members[viewer.number]?.baseline = seq
        if let delivered = channel.delivered, seq < delivered {
            let missed = channel.recent.filter { $0.seq > seq && $0.seq <= delivered }
            if missed.count == delivered - seq {
                frames += missed.sorted { $0.seq < $1.seq }.filter { $0.subject != viewer.userId }.map(\.bytes)
            } else {
                channel.members[viewer.number]?.baseline = nil
                channel.waiting += 1
                requestSnapshot(of: key, for: viewer)
            }
        }
        return frames
    }

    /// Reads a fresh snapshot for one waiting local session and sends it.
    func requestSnapshot(of key: ChannelKey, for session: Session, then finished: (() -> Void)? = nil) {
        requestSnapshot(of: key, for: [session], then: finished)
    }

    /// Reads a fresh snapshot for waiting local sessions of one channel, once for all of them
    /// (the roster is the same; each viewer's own entry comes in the same reply), and sends
    /// each its snapshot.
    func requestSnapshot(of key: ChannelKey, for sessions: [Session], then finished: (() -> Void)? = nil) {
        guard !sessions.isEmpty else {
            finished?()
            return
        }
        whenHeard(key) { [self] in readSnapshot(of: key, for: sessions, then: finished) }
    }

    /// ``requestSnapshot(of:for:then:)`` once the channel is heard.
    private func readSnapshot(of key: ChannelKey, for sessions: [Session], then finished: (() -> Void)?) {
        let channelKeys = keys.channel(key)
        let reading = local[key]
        let sent = reading?.roster
        reading?.rosterReads += 1
        let snapshot = PresenceScripts.snapshot(channelArguments(key, channelKeys, intervalHead: false),
                                                limit: max(1, configuration.presence.snapshotMaxMembers), held: sent?.held ?? .none,
                                                viewers: sessions.map(\.userId))
        store.call([snapshot]) { [self] result in
            defer { finished?() }
            reading?.rosterReads -= 1
            guard let channel = local[key] else { return }
            let waiting = sessions.enumerated().filter { channel.members[$0.element.number] != nil }
            guard !waiting.isEmpty else { return }
            switch result {
            case .failure:
                // The store is unreachable (its command link may come back after the pub/sub
                // one): the sessions keep waiting and are read again a heartbeat later. Before,
                // they went on from the channel's last delivered `seq`, none after a resync, and
                // the channel buffered every later event for good: the node was deaf after a
                // Redis restart (issue 29 item 0).
                for (_, session) in waiting {
                    snapshotRetries.schedule(SnapshotRetry(channel: key, session: session.number),
                                             at: clock.monotonic + configuration.cluster.heartbeatSeconds.milliseconds)
                }
                return
            case .success(let replies):
                let reply = SnapshotScriptReply(replies.first ?? .null)
                channel.intervalMode = reply.mode == PresenceMode.interval.rawValue
                let roster = roster(replied: reply.roster, seq: reply.seq, version: reply.rosterVersion, held: reply.rosterHeld,
                                    sent: sent, in: channel)
                for (index, session) in waiting {
                    channel.waiting -= 1
                    let frames = snapshotFrames(of: key, viewer: session, seq: reply.seq, mode: reply.mode, roster: roster,
                                                own: reply.roster(forViewerAt: index), in: channel)
                    for frame in frames { outbox.send(frame, to: session) }
                }
            }
            drain(key)
        }
    }

    /// Reads again the snapshots that failed because the store was unreachable (for sessions
    /// still here and still waiting), once per channel.
    func fireDueSnapshotRetries() {
        var due: [ChannelKey: [Session]] = [:]
        for retry in snapshotRetries.popDue(now: clock.monotonic) {
            guard let member = local[retry.channel]?.members[retry.session], member.baseline == nil else { continue }
            due[retry.channel, default: []].append(member.session)
        }
        for key in due.keys.sorted() { requestSnapshot(of: key, for: due[key]!) }
    }

    /// A gap in `seq`: every local presence session of the channel gets a fresh snapshot
    /// (a client replaces its roster with any snapshot it receives), then delivery goes on
    /// from there.
    func resync(_ key: ChannelKey) {
        guard let channel = local[key] else { return }
        channel.delivered = nil
        channel.lastEventBytes = nil
        let sessions = channel.members.values.filter { $0.flags.presence && $0.baseline != nil }.map(\.session)
        for session in sessions {
            channel.members[session.number]?.baseline = nil
            channel.waiting += 1
        }
        requestSnapshot(of: key, for: sessions)
    }

    /// After a lost pub/sub link (PROTOCOL §9): each local channel's `seq` in Redis is
    /// compared with the last one delivered here; where they differ the channel is read again
    /// (fresh snapshots), where they are equal nothing is sent.
    func resyncEverything() {
        let channels = local.keys.sorted()
        guard !channels.isEmpty else { return }
        // Redis may have restarted or failed over, and its `seq` and roster versions with it.
        for channel in local.values { channel.roster = nil }
        let commands = channels.map { key in StoreCommand.command([Array("HGET".utf8), Array(keys.channel(key).base.utf8), Array("seq".utf8)]) }
        store.call(commands) { [self] result in
            guard case .success(let replies) = result else {
                for key in channels { resync(key) }
                return
            }
            for (key, reply) in zip(channels, replies) {
                guard let channel = local[key] else { continue }
                let seq = Int(reply.integer ?? 0)
                if channel.delivered != seq { resync(key) }
            }
        }
    }

    /// A session taken over from another node (or from a node that died): its channels and
    /// flags as Redis has them join the local views, each waiting for a snapshot.
    func adopt(_ session: Session, channels: [(ChannelKey, JoinFlags)]) {
        for (key, flags) in channels {
            session.presence.joined[key] = flags
            let channel = localChannel(key)
            channel.members[session.number] = LocalChannel.Member(session: session, flags: flags, baseline: nil)
            if flags.presence { channel.waiting += 1 }
        }
    }

    /// A held session was resumed: a fresh snapshot for each presence-enabled channel (the
    /// session missed events while held), then `finished` (held messages go after them).
    func sessionResumed(_ session: Session, then finished: @escaping () -> Void) -> [JSON] {
        let joined = session.presence.joined.sorted { $0.key < $1.key }
        let presenceChannels = joined.filter { $0.value.presence }.map(\.key).filter { local[$0]?.members[session.number] != nil }
        var remaining = presenceChannels.count
        if remaining == 0 { finished() }
        for key in presenceChannels {
            let channel = local[key]!
            if channel.members[session.number]?.baseline != nil {
                channel.members[session.number]?.baseline = nil
                channel.waiting += 1
            }
            requestSnapshot(of: key, for: session) {
                remaining -= 1
                if remaining == 0 { finished() }
            }
        }
        return joined.map { $0.key.json }
    }

    // MARK: - Interval flushes

    /// Arms this node's flush of `key` for the `due` time a script reported (`[due, now]`, Redis ms).
    func scheduleFlush(_ key: ChannelKey, dueAndNow: StoreReply) {
        guard let due = dueAndNow[0].integer, due > 0, let now = dueAndNow[1].integer else { return }
        flushes.schedule(key, at: clock.monotonic + max(0, due - now))
    }

    /// Runs the flush script for every channel due; the first node to run it at or after the
    /// due time sends the `interval` event, the others find nothing due.
    func fireDueFlushes() {
        flush(flushes.popDue(now: clock.monotonic))
    }

    /// Every reaper tick: the flushes overdue by a heartbeat, whichever node scheduled them (it
    /// may have died before its timer fired), at most 100 per group's bucket (`P{<g>}due`) per
    /// tick, one script per group of `groups` (the scanner's slice of this tick: every group
    /// within ``ClusterSessions/flushRoundSeconds(_:)``). The flush script sends the `interval`
    /// event once, whoever runs it.
    func flushOverdue(groups: [Int], ifFailed failed: @escaping () -> Void = {}) {
        let slackMs = max(configuration.cluster.heartbeatSeconds, configuration.presence.intervalSeconds / 2).milliseconds
        call(groups: groups, priority: .background, { PresenceScripts.overdueFlushes(set: keys.dueFlushes(group: $0), slackMs: slackMs, limit: 100) }) { [self] result in
            guard case .success(let replies) = result else { return failed() }
            flush(replies.flatMap { ClusterKeys.channels(fromIds: $0) })
        }
    }

    /// Runs the flush script for `due` channels and arms the next flush each reports.
    private func flush(_ due: [ChannelKey]) {
        guard !due.isEmpty else { return }
        let commands = due.map { key in
            PresenceScripts.flush(channelArguments(key, keys.channel(key), intervalHead: false))
        }
        store.call(commands) { [self] result in
            guard case .success(let replies) = result else {
                // Unreachable store: try again in one interval.
                for key in due { flushes.schedule(key, at: clock.monotonic + configuration.presence.intervalSeconds.milliseconds) }
                return
            }
            for (key, reply) in zip(due, replies.map(FlushingScriptReply.init)) {
                scheduleFlush(key, dueAndNow: reply.dueAndNow)
            }
        }
    }
}
