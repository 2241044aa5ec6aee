import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// `rollcall-bench connect`: logins per second in one burst, then more sessions in steps
/// until one broker process holds `--max` sessions (or failures appear).
struct Connect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Logins per second, and the most concurrent sessions one broker process holds.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Sessions of the first burst, which measures logins/s. Default 10,000; --quick 1,500.")
    var burst: Int?

    @Option(help: "Sessions to reach in total (descriptor cap 20,000 per process). Default 19,000; --quick 2,000.")
    var max: Int?

    @Option(help: "Sessions added per step after the burst. Default 3,000; --quick 500.")
    var step: Int?

    @Option(help: "Seconds to hold the peak before checking again that every session is still there.")
    var hold = 5.0

    /// The issue's targets.
    static let targetLoginsPerSecond = 5000.0
    static let targetConcurrentSessions = 19_000

    func validate() throws {
        if let max, !(1...19_000).contains(max) { throw ValidationError("--max must be 1...19000 (descriptor cap)") }
        if let burst, burst < 1 { throw ValidationError("--burst must be at least 1") }
        if let step, step < 1 { throw ValidationError("--step must be at least 1") }
        guard hold >= 0, hold <= 120 else { throw ValidationError("--hold must be 0...120") }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let peakTarget = max ?? (report.quick ? 2_000 : Self.targetConcurrentSessions)
        let burstSize = Swift.min(burst ?? (report.quick ? 1_500 : 10_000), peakTarget)
        let stepSize = step ?? (report.quick ? 500 : 3_000)
        let broker = try target.resolve()
        defer { broker.finish() }
        let brokerSampler = ProcessSampler(pid: broker.pid)
        let benchSampler = ProcessSampler(pid: getpid())
        let start = MonotonicSeconds.now
        print("connect: broker \(broker.url) pid \(broker.pid); burst \(burstSize), then steps of \(stepSize) up to \(peakTarget)")

        guard let baseline = brokerSampler.sample(elapsed: 0) else { throw ValidationError("broker pid \(broker.pid) is gone") }
        let pool = try LoadPool(url: broker.url, threads: report.threads, connections: peakTarget, rxBufferSize: 1024)
        defer { pool.shutdown() }
        let counters = Counters()
        let waves = LoginWave(counters: counters)

        // 1. The burst: logins per second and broker CPU per login.
        let benchCPUBefore = benchSampler.cpuSeconds() ?? 0
        let first = waves.open(burstSize, firstIndex: 0, pool: pool, timeout: Swift.max(30, Double(burstSize) / 500), label: "connect burst")
        guard let afterBurst = brokerSampler.sample(elapsed: MonotonicSeconds.now - start) else {
            throw ValidationError("broker pid \(broker.pid) is gone")
        }
        let benchCPUBurst = (benchSampler.cpuSeconds() ?? 0) - benchCPUBefore
        let burstCPU = afterBurst.cpuSeconds - baseline.cpuSeconds
        print(String(format: "connect: burst %d/%d logged in in %.2f s = %.0f logins/s; broker CPU %.2f s, bench CPU %.2f s",
                     first.loggedIn, burstSize, first.seconds, first.rate, burstCPU, benchCPUBurst))

        // 2. Steps until the peak target is held or a step fails.
        var series: [[Double]] = [[0, Double(baseline.rssKiB) / 1024], [Double(first.loggedIn), Double(afterBurst.rssKiB) / 1024]]
        var stepRates: [String] = [String(format: "%d: %.0f/s", first.loggedIn, first.rate)]
        var opened = burstSize
        var failures = first.failed
        var unfinished = first.unfinished
        var peakRSS = afterBurst.rssKiB
        while opened < peakTarget, failures == 0, unfinished == 0 {
            let size = Swift.min(stepSize, peakTarget - opened)
            let wave = waves.open(size, firstIndex: opened, pool: pool, timeout: Swift.max(60, Double(size) / 50), label: "connect step")
            opened += size
            failures += wave.failed
            unfinished += wave.unfinished
            let held = counters["loggedIn"] - counters["closedAfterLogin"]
            guard let sample = brokerSampler.sample(elapsed: MonotonicSeconds.now - start) else { break }
            peakRSS = Swift.max(peakRSS, sample.rssKiB)
            series.append([Double(held), Double(sample.rssKiB) / 1024])
            stepRates.append(String(format: "%d: %.0f/s", held, wave.rate))
            print(String(format: "connect: %d held, step of %d at %.0f logins/s, %d failed; broker rss %.1f MiB",
                         held, size, wave.rate, wave.failed, Double(sample.rssKiB) / 1024))
        }

        // 3. The peak: does the broker still answer, and does everyone stay?
        let peakHeld = counters["loggedIn"] - counters["closedAfterLogin"]
        let health = LoopbackHTTP(url: broker.url)?.get("/healthz", timeoutSeconds: 5)?.status
        let pingMs = ping(waves.sessions.first)
        print("connect: peak \(peakHeld) held; /healthz \(health.map(String.init) ?? "no answer"); ping \(pingMs.map { String(format: "%.1f ms", $0) } ?? "failed")")
        let holdSteps = Int(hold.rounded(.up))
        let holdStart = MonotonicSeconds.now
        let holdCPUStart = brokerSampler.cpuSeconds() ?? 0
        for second in 0..<holdSteps {
            usleep(1_000_000)
            print("connect: holding \(second + 1)/\(holdSteps) s: \(counters["loggedIn"] - counters["closedAfterLogin"]) held")
        }
        let finalHeld = counters["loggedIn"] - counters["closedAfterLogin"]
        let holdSeconds = MonotonicSeconds.now - holdStart
        let idleCPUShare = holdSeconds > 0 ? ((brokerSampler.cpuSeconds() ?? 0) - holdCPUStart) / holdSeconds : 0
        let pingAfterHold = ping(waves.sessions.last)
        let peakSample = brokerSampler.sample(elapsed: MonotonicSeconds.now - start)
        peakRSS = Swift.max(peakRSS, peakSample?.rssKiB ?? 0)
        let benchRSS = benchSampler.residentKiB() ?? 0

        var result = BenchResult(scenario: "connect")
        result.metrics = [
            BenchMetric("logins per second (burst of \(burstSize))", first.rate, "/s", atLeast: Self.targetLoginsPerSecond),
            BenchMetric("broker CPU per login (burst)", first.loggedIn > 0 ? burstCPU / Double(first.loggedIn) * 1e6 : 0, "µs"),
            BenchMetric("bench CPU per login (burst, \(report.threads) threads)", first.loggedIn > 0 ? benchCPUBurst / Double(first.loggedIn) * 1e6 : 0, "µs"),
            BenchMetric("concurrent sessions held", Double(Swift.min(peakHeld, finalHeld)), "", atLeast: Double(peakTarget)),
            BenchMetric("login failures (error, or closed before the reply)", Double(failures)),
            BenchMetric("logins unfinished when the step's time was up", Double(unfinished)),
            BenchMetric("sessions lost while holding \(holdSteps) s", Double(peakHeld - finalHeld)),
            BenchMetric("broker CPU while holding the peak idle", idleCPUShare * 100, "% of a core"),
            BenchMetric("broker RSS at peak", Double(peakRSS) / 1024, "MiB"),
            BenchMetric("broker RSS per session at peak", Double(peakRSS - baseline.rssKiB) / Double(Swift.max(1, peakHeld)), "KiB"),
            BenchMetric("bench RSS at peak", Double(benchRSS) / 1024, "MiB"),
            BenchMetric("ping at peak (first session)", pingMs ?? -1, "ms"),
            BenchMetric("ping after hold (last session)", pingAfterHold ?? -1, "ms"),
            BenchMetric("/healthz status at peak", Double(health ?? 0)),
        ]
        result.chartTitle = "connect: broker RSS as sessions are added"
        result.xLabel = "sessions held"
        result.yLabel = "broker RSS (MiB)"
        result.series = [BenchSeries(name: "broker RSS (MiB)", points: series)]
        result.notes = [
            "logins/s = sessions logged in / seconds from the first connect to the last login reply, " +
                "with at most \(Swift.max(16, 256 / Swift.max(1, report.threads)) * Swift.max(1, report.threads)) WebSocket handshakes in flight " +
                "(\(report.threads) client lws threads); the broker is one thread. Broker CPU from /proc, includes accept, handshake and login.",
            "Broker config: bench defaults (in-memory storage, warning logs); connection cap = descriptor limit − 64. " +
                "One bench process holds every client socket (soft RLIMIT_NOFILE 20,000).",
            "Logins/s per wave (sessions held: rate): \(stepRates.joined(separator: ", ")).",
            "A ping of -1 ms means no reply within 5 s; /healthz 0 means no answer.",
        ]
        result.counters = counters.snapshot
        try result.finish(report)
    }

    /// Round trip of a blocking `ping` in ms, nil when it failed.
    private func ping(_ session: RollcallConnection?) -> Double? {
        guard let session else { return nil }
        let begin = MonotonicSeconds.now
        guard (try? session.request(Op.ping.rawValue, timeout: .seconds(5)))?.ok == true else { return nil }
        return (MonotonicSeconds.now - begin) * 1000
    }
}
