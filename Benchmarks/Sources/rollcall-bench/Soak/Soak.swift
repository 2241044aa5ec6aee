import ArgumentParser
import Foundation

/// `rollcall-bench soak`: many sessions with steady churn; broker RSS over time must stay flat
/// after warm-up.
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "N sessions with steady churn (joins, leaves, drops, state changes); reports broker RSS growth after warm-up.")

    @OptionGroup var target: BrokerTargetOptions

    @Option(help: "Sessions kept open (client and broker each stay under 20,000 descriptors).")
    var sessions = 10_000

    @Option(help: "Seconds of churn after all sessions are open.")
    var duration = 180.0

    @Option(help: "Channels the churn spreads over.")
    var channels = 100

    @Option(help: "Churn operations per second (join, leave, setState, drop + reconnect, close + reconnect).")
    var rate = 50

    @Option(help: "Fraction of the run treated as warm-up; growth is measured from its end.")
    var warmup = 0.2

    @Option(help: "Allowed RSS growth after warm-up, in percent.")
    var maxGrowth = 5.0

    @Option(help: "Client service threads (lws runtimes) the sessions are spread over.")
    var threads = 4

    @Option(help: "Write the samples and the verdict here as JSON.")
    var json = "soak-result.json"

    func validate() throws {
        guard (1...19_000).contains(sessions) else { throw ValidationError("--sessions must be 1...19000 (fd cap)") }
        guard duration > 0, duration <= 86_400 else { throw ValidationError("--duration must be in (0, 86400]") }
        guard (1...10_000).contains(channels) else { throw ValidationError("--channels must be 1...10000") }
        guard (1...100_000).contains(rate) else { throw ValidationError("--rate must be 1...100000") }
        guard (1...16).contains(threads) else { throw ValidationError("--threads must be 1...16") }
        guard warmup >= 0, warmup < 1 else { throw ValidationError("--warmup must be in [0, 1)") }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)  // progress lines show up at once, even in a log file
        let broker = try target.resolve()
        defer { broker.finish() }
        let driver = try SoakDriver(url: broker.url, sessions: sessions, channels: channels, threads: threads)
        let sampler = ProcessSampler(pid: broker.pid)
        print("soak: broker \(broker.url) pid \(broker.pid); opening \(sessions) sessions")

        let opened = driver.openAll(timeout: max(60, Double(sessions) / 100))
        print("soak: \(opened)/\(sessions) sessions logged in; churning \(rate)/s for \(Int(duration)) s")
        guard opened >= sessions * 95 / 100 else {
            driver.shutdown()
            throw ValidationError("only \(opened) of \(sessions) sessions logged in")
        }

        var samples: [ProcessSample] = []
        let start = Date()
        var nextSample = 0.0
        var churnCredit = 0.0
        var last = start
        while true {
            let now = Date()
            let elapsed = now.timeIntervalSince(start)
            if elapsed >= duration { break }
            churnCredit += now.timeIntervalSince(last) * Double(rate)
            last = now
            let operations = min(Int(churnCredit), rate)  // bounded per step
            churnCredit -= Double(operations)
            driver.churn(operations: operations)
            if elapsed >= nextSample {
                guard let sample = sampler.sample(elapsed: elapsed) else { throw ValidationError("broker pid \(broker.pid) is gone") }
                samples.append(sample)
                print(String(format: "soak: t=%5.0fs rss=%7.1f MiB cpu=%6.1fs open=%d ops=%d replies=%d errors=%d",
                             elapsed, Double(sample.rssKiB) / 1024, sample.cpuSeconds, driver.openCount,
                             driver.counters["ops"], driver.counters["replies"], driver.counters["errorReplies"]))
                nextSample += 1
            }
            usleep(20_000)
        }
        if let final = sampler.sample(elapsed: Date().timeIntervalSince(start)) { samples.append(final) }
        let counters = driver.counters.snapshot
        driver.shutdown()

        let report = SoakReport(samples: samples, warmupFraction: warmup, maxGrowthPercent: maxGrowth,
                                sessions: sessions, duration: duration, rate: rate, channels: channels,
                                counters: counters)
        print(report.table())
        try report.write(to: json)
        print("soak: samples written to \(json)")
        if !report.passed { throw ExitCode(1) }
    }
}
