import ArgumentParser
import Foundation

/// `rollcall-bench snapshot`: the cost of a big presence snapshot on the wire. `--members`
/// plain-socket sessions join one channel (presence off, so they receive nothing more); then
/// `--watchers` sessions, one after another, log in, join with presence, wait for their
/// snapshot and close. Reports the bytes the broker sent and its CPU per watcher (bytes as the watcher's socket
/// read them: `/proc/PID/io` `wchar` does not count `send(2)`, which lws uses), the
/// snapshot's JSON size, and the broker's memory per member connection. `--deflate` runs the
/// broker with `http.permessageDeflate` on and every socket offering it (permessage-deflate
/// state is then part of each connection's memory).
struct SnapshotBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "A big channel's presence snapshot: broker bytes written, CPU and memory per connection, with or without permessage-deflate.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Members of the channel (the snapshot lists up to presence.snapshotMaxMembers, default 1000).")
    var members = 1000

    @Option(help: "Sessions that each join and receive one snapshot.")
    var watchers = 100

    @Option(help: "Bytes of each member's presence state (one string value; 0: empty state).")
    var stateBytes = 0

    @Flag(help: "Start the broker with http.permessageDeflate on; every socket offers it and inflates.")
    var deflate = false

    @Option(help: "With --deflate: the broker's http.permessageDeflateMemLevel (1-9; default: the broker's 8).")
    var deflateMemLevel: Int?

    func validate() throws {
        guard (1...18_000).contains(members) else { throw ValidationError("--members must be 1...18000") }
        guard (1...10_000).contains(watchers) else { throw ValidationError("--watchers must be 1...10000") }
        guard (0...8000).contains(stateBytes) else { throw ValidationError("--state-bytes must be 0...8000") }
        if let deflateMemLevel, !deflate || !(1...9).contains(deflateMemLevel) {
            throw ValidationError("--deflate-mem-level takes 1...9 and goes with --deflate")
        }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        // Over maxInstantEvents members the channel is in interval mode, whose snapshot shows the
        // roster as of the last interval event: a 1 s interval, and a wait for it below.
        var config: [String: Any] = ["presence": ["intervalSeconds": 1]]
        if deflate { config["http"] = ["permessageDeflate": true, "permessageDeflateMemLevel": deflateMemLevel ?? 8] }
        let broker = try target.resolve(config: config)
        defer { broker.finish() }
        guard let http = LoopbackHTTP(url: broker.url) else { throw ValidationError("not a loopback URL") }
        let port = Int(http.port)
        let pool = RawSocketPool(threads: report.threads, deflate: deflate)
        defer { pool.shutdown() }
        let sampler = ProcessSampler(pid: broker.pid)
        let channel = "snapshot:\(getpid())"
        print("snapshot: broker \(broker.url) (pid \(broker.pid)), \(members) members, \(watchers) watchers, deflate \(deflate)")

        let rssBefore = sampler.residentKiB() ?? 0
        let counters = Counters()
        let joined = Array(#"{"id":2,"ok":true"#.utf8)
        let snapshotPrefix = Array(#"{"event":"presence","type":"snapshot""#.utf8)
        let state = stateBytes > 0 ? #","state":{"s":"\#(String(repeating: "s", count: stateBytes))"}"# : ""
        var sockets: [RawWebSocket] = []
        for index in 0..<members {
            let socket = try pool.open(port: port) { socket in
                socket.onLine = { line in if RawEventLine.starts(line, with: joined) { counters.add("joined") } }
            }
            socket.send(text: #"{"id":1,"op":"login","userId":"member-\#(index)"}"#)
            socket.send(text: #"{"id":2,"op":"join","channel":"\#(channel)","presence":false\#(state)}"#)
            sockets.append(socket)
        }
        let deadline = MonotonicSeconds.now + 30 + Double(members) / 100
        while counters["joined"] < members, MonotonicSeconds.now < deadline { usleep(20_000) }
        guard counters["joined"] == members else { throw ValidationError("only \(counters["joined"]) of \(members) members joined") }
        let compressedMembers = sockets.filter(\.isCompressed).count
        let rssAfter = sampler.residentKiB() ?? rssBefore
        usleep(1_500_000) // the interval event that lists the last joins (attached brokers: their own interval)

        let cpu0 = CPUTimes.read(pid: broker.pid) ?? CPUTimes()
        var wireBytes = 0, snapshotBytes = 0, compressedWatchers = 0, listed = 0
        for index in 0..<watchers {
            let arrived = DispatchSemaphore(value: 0)
            let text = LockedArray<String>(repeating: "", count: 1)
            let watcher = try pool.open(port: port) { socket in
                socket.onLine = { line in
                    guard RawEventLine.starts(line, with: snapshotPrefix) else { return }
                    text[0] = String(decoding: line, as: UTF8.self)
                    arrived.signal()
                }
            }
            watcher.send(text: #"{"id":1,"op":"login","userId":"watcher-\#(index)"}"#)
            watcher.send(text: #"{"id":2,"op":"join","channel":"\#(channel)","presence":true}"#)
            guard arrived.wait(timeout: .now() + 10) == .success else { throw ValidationError("watcher \(index): no snapshot in 10 s") }
            wireBytes += watcher.bytesReceived
            snapshotBytes = text[0].utf8.count
            listed = text[0].components(separatedBy: #"{"userId":"#).count - 1
            if watcher.isCompressed { compressedWatchers += 1 }
            watcher.send(opcode: 0x8, payload: [0x03, 0xE8])
        }
        let cpu = (CPUTimes.read(pid: broker.pid) ?? cpu0) - cpu0

        var result = BenchResult(scenario: "snapshot")
        let perWatcher = Double(watchers)
        result.metrics = [
            BenchMetric("members in the channel", Double(members)),
            BenchMetric("members listed in the snapshot", Double(listed)),
            BenchMetric("snapshot event, JSON bytes (inflated)", Double(snapshotBytes), "B"),
            BenchMetric("bytes the broker sent a watcher, on the wire (login + join replies + snapshot, framing included)", Double(wireBytes) / perWatcher, "B"),
            BenchMetric("broker CPU per watcher (login, join, snapshot)", cpu.total / perWatcher * 1000, "ms"),
            BenchMetric("broker RSS per member connection", Double(rssAfter - rssBefore) / Double(members), "KiB"),
            BenchMetric("members / watchers with permessage-deflate", Double(compressedMembers + compressedWatchers)),
        ]
        result.notes = [
            "Members join with presence false and \(stateBytes == 0 ? "an empty state" : "a \(stateBytes)-byte state"); each watcher logs in, joins with presence true, waits for its snapshot and closes; \(watchers) watchers one after another. http.permessageDeflate \(deflate)\(deflate ? ", memLevel \(deflateMemLevel ?? 8)" : ""). RSS per member = broker VmRSS after the members joined minus before, ÷ members (zlib state included with deflate: lws sets it up at the first compressed write).",
        ]
        for socket in sockets { socket.send(opcode: 0x8, payload: [0x03, 0xE8]) }
        try result.finish(report)
    }
}
