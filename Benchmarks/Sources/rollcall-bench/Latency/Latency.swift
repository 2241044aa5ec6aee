import ArgumentParser
import Foundation

/// `rollcall-bench latency`: members of one announce-mode channel time `setState` →
/// `stateChanged` while background messages flow through another channel.
struct Latency: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "setState → stateChanged latency (p50/p99/p99.9) for N announce-mode members under background message load.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Members of the announce-mode channel, the prober included (default 1000; 300 with --quick).")
    var members: Int?

    @Option(help: "Seconds of probing (default 30; 8 with --quick).")
    var duration: Double?

    @Option(help: "Probes (setState calls) per second.")
    var probeRate = 10.0

    @Option(help: "Receivers of the background channel.")
    var backgroundReceivers = 100

    @Option(help: "Background publishes per second (× receivers = background deliveries/s).")
    var backgroundRate = 200.0

    @Option(help: "Target: p99 latency in ms.")
    var targetP99 = 5.0

    @Flag(help: "Members and background receivers on the client library's lws runtimes instead of plain sockets read on epoll (the bench before issue 16 §4).")
    var lwsClients = false

    @Option(help: "Also measure the raw broadcast split over this many writer threads, each owning a share of the sockets (1: not measured).")
    var writerThreads = 2

    func validate() throws {
        if let members, !(2...15_000).contains(members) { throw ValidationError("--members must be 2...15000") }
        if let duration, !(1...600).contains(duration) { throw ValidationError("--duration must be 1...600 s") }
        guard probeRate > 0, probeRate <= 1000 else { throw ValidationError("--probe-rate must be in (0, 1000]") }
        guard (0...3000).contains(backgroundReceivers) else { throw ValidationError("--background-receivers must be 0...3000") }
        guard backgroundRate >= 0, backgroundRate <= 100_000 else { throw ValidationError("--background-rate must be 0...100000") }
        guard (1...16).contains(writerThreads) else { throw ValidationError("--writer-threads must be 1...16") }
    }

    /// Announce mode for every member, and request limits that let the background publisher
    /// and the prober run at their rates.
    static func brokerConfig(members: Int) -> [String: Any] {
        [
            "presence": ["maxInstantEvents": max(1000, members + 10)],
            "limits": ["requestsPerSecond": 100_000, "requestBurst": 100_000],
        ]
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let memberCount = members ?? (report.quick ? 300 : 1000)
        let seconds = duration ?? (report.quick ? 8 : 30)
        let maxProbes = Int(seconds * probeRate) + 16
        let broker = try target.resolve(config: Self.brokerConfig(members: memberCount))
        defer { broker.finish() }
        print("latency: broker \(broker.url) pid \(broker.pid); \(memberCount) members, \(backgroundReceivers) background receivers, "
              + (lwsClients ? "lws clients" : "plain sockets on epoll") + ", \(report.threads) reader threads")
        let driver = try LatencyDriver(url: broker.url, members: memberCount, backgroundReceivers: backgroundReceivers,
                                       threads: report.threads, maxProbes: maxProbes, rawClients: !lwsClients)
        defer { driver.shutdown() }
        guard driver.open(members: memberCount, backgroundReceivers: backgroundReceivers,
                          timeout: max(30, Double(memberCount) / 50)) else {
            throw ValidationError("sessions failed to open or join: \(driver.counters.snapshot)")
        }
        print("latency: all joined; waiting for the join storm to settle")
        driver.waitForQuiet(quiet: 1, timeout: 30)

        // The floors' sockets, read by as many threads as the members' (see RawBroadcast).
        let lwsFloor = LWSBroadcast(sockets: memberCount - 1, readerThreads: report.threads)
        let floor = RawBroadcast(sockets: memberCount - 1, readerThreads: report.threads)
        let sampler = ProcessSampler(pid: broker.pid)
        let run = LatencyRun(driver: driver, floor: floor, lwsFloor: lwsFloor, sampler: sampler, seconds: seconds,
                             probeRate: probeRate, backgroundRate: backgroundRate, maxProbes: maxProbes)
        let scrape = MetricsScrape(url: broker.url)
        let writeCounters = ["rollcall_objects_out_total", "rollcall_writes_coalesced_total"]
        let before = scrape?.read(writeCounters)
        guard let measured = run.measure() else { throw ValidationError("broker pid \(broker.pid) is gone") }
        var held: (objects: Double, held: Double)?
        if let before, let after = scrape?.read(writeCounters), let heldAfter = after[writeCounters[1]] {
            held = ((after[writeCounters[0]] ?? 0) - (before[writeCounters[0]] ?? 0), heldAfter - (before[writeCounters[1]] ?? 0))
        }
        floor?.close()
        lwsFloor?.close()
        // The floors, in the same run: one frame write to each of N - 1 connections, nothing of
        // the broker — the median of the rounds run between probes.
        let lwsFrameWrite = measured.lwsFloorRounds.isEmpty ? nil : LatencyReport.percentile(measured.lwsFloorRounds, 50)
        print("latency: an lws broadcast between probes costs \(lwsFrameWrite.map { String(format: "%.2f", $0) } ?? "?") µs per frame write")
        let frameWrite = measured.floorRounds.isEmpty ? nil : LatencyReport.percentile(measured.floorRounds, 50)
        print("latency: a plain-write broadcast between probes costs \(frameWrite.map { String(format: "%.2f", $0) } ?? "?") µs per frame write")
        // The floor as measured until session 8: after the run, one reader thread.
        let frameWriteAfter = RawBroadcast.microsecondsPerWrite(sockets: memberCount - 1)
        print("latency: after the run, read by one thread, \(frameWriteAfter.map { String(format: "%.2f", $0) } ?? "?") µs per frame write")
        // The same broadcast split over writer threads (each owning a share of the sockets, no locks).
        let splitFrameWrite = writerThreads > 1
            ? RawBroadcast.microsecondsPerWrite(sockets: memberCount - 1, writerThreads: writerThreads) : nil
        if let splitFrameWrite {
            print("latency: split over \(writerThreads) writer threads, \(String(format: "%.2f", splitFrameWrite)) µs per frame write")
        }
        let result = LatencyReport(measured: measured, members: memberCount, backgroundReceivers: backgroundReceivers,
                                   targetP99: targetP99, lwsClients: lwsClients, counters: driver.counters.snapshot, coalescing: held,
                                   lwsFrameWriteMicros: lwsFrameWrite, frameWriteMicros: frameWrite,
                                   frameWriteAfterRunMicros: frameWriteAfter,
                                   splitFrameWrite: splitFrameWrite.map { (writerThreads, $0) }).result()
        try result.finish(report)
    }
}
