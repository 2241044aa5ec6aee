import ArgumentParser
import Foundation

/// `rollcall-bench mosquitto`: the fan-out scenario against Rollcall and against a throwaway
/// mosquitto 2.0 (MQTT over WebSocket) in the same run, rate by rate, with the same raw
/// WebSocket receivers: broker CPU per delivery of each, their ratio, and losses.
struct VersusMosquitto: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mosquitto",
        abstract: "Fan-out broker CPU per delivery, Rollcall beside mosquitto over WebSocket, at the same rates.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Receivers on each broker (default 1000; 200 with --quick).")
    var receivers: Int?

    @Option(help: "Offered deliveries per second, comma-separated; each rate runs on Rollcall, then on mosquitto.")
    var rates = "100000,200000,300000"

    @Option(help: "Seconds of publishing per step (default 5; 2 with --quick).")
    var stepSeconds: Double?

    @Option(help: "The mosquitto executable.")
    var mosquitto = "mosquitto"

    @Option(help: "Target: Rollcall's CPU per delivery at most this share of mosquitto's.")
    var targetRatio = 0.25

    @Option(help: "Rollcall publisher's unanswered publish requests allowed at once (as in fanout; mosquitto's QoS 0 publisher has no window).")
    var window = 128

    @Option(help: "Largest delivery lag, in seconds, for which a Rollcall step counts as sustained (as in fanout).")
    var maxLag = 0.25

    func validate() throws {
        if let receivers, !(1...8_000).contains(receivers) { throw ValidationError("--receivers must be 1...8000 (fd cap, two brokers)") }
        guard !offeredRates.isEmpty, offeredRates.allSatisfy({ $0 >= 1 && $0 <= 10_000_000 }) else {
            throw ValidationError("--rates: comma-separated deliveries/s in 1...10,000,000")
        }
        if let stepSeconds, !(0.5...60).contains(stepSeconds) { throw ValidationError("--step-seconds must be 0.5...60") }
        guard (1...100_000).contains(window) else { throw ValidationError("--window must be 1...100000") }
        guard maxLag > 0, maxLag <= 10 else { throw ValidationError("--max-lag must be in (0, 10]") }
    }

    private var offeredRates: [Double] { rates.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) } }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let count = receivers ?? (report.quick ? 200 : 1000)
        let seconds = stepSeconds ?? (report.quick ? 2 : 5)
        let broker = try target.resolve(config: Fanout.brokerConfig)
        defer { broker.finish() }
        let mqtt = try MosquittoProcess(executable: mosquitto)
        defer { mqtt.stop() }
        print("mosquitto: rollcall \(broker.url) pid \(broker.pid), mosquitto ws port \(mqtt.port) pid \(mqtt.pid); \(count) receivers each, \(seconds) s steps")

        let rollcall = try FanoutDriver(url: broker.url, receivers: count, threads: report.threads, rawReceivers: true)
        defer { rollcall.shutdown() }
        guard rollcall.open(receivers: count, timeout: max(30, Double(count) / 50)) == count, rollcall.hasPublisher else {
            throw ValidationError("not every Rollcall receiver joined")
        }
        let other = MosquittoFanoutDriver(port: mqtt.port, threads: report.threads)
        defer { other.shutdown() }
        guard other.open(receivers: count, timeout: max(30, Double(count) / 50)) == count, other.hasPublisher else {
            throw ValidationError("not every mosquitto receiver subscribed")
        }
        let ramp = FanoutRamp(driver: rollcall, sampler: ProcessSampler(pid: broker.pid), receivers: count,
                              stepSeconds: seconds, drainSeconds: max(2, seconds), window: window,
                              metrics: MetricsScrape(url: broker.url))
        var pairs: [(rollcall: FanoutStep, mosquitto: MosquittoStep)] = []
        for offered in offeredRates {
            print(String(format: "mosquitto: rate %.0f deliveries/s (%.1f publishes/s)", offered, offered / Double(count)))
            guard let ours = ramp.run(offered: offered) else { throw ValidationError("rollcall pid \(broker.pid) is gone") }
            print("  rollcall:  \(ours.line)")
            guard let theirs = MosquittoStep.run(driver: other, pid: mqtt.pid, receivers: count, offered: offered,
                                                 stepSeconds: seconds, drainSeconds: max(2, seconds)) else {
                throw ValidationError("mosquitto pid \(mqtt.pid) is gone")
            }
            print("  mosquitto: \(theirs.line)")
            pairs.append((ours, theirs))
        }
        try result(pairs, receivers: count).finish(report)
    }

    private func result(_ pairs: [(rollcall: FanoutStep, mosquitto: MosquittoStep)], receivers: Int) -> BenchResult {
        var result = BenchResult(scenario: "mosquitto")
        for (ours, theirs) in pairs {
            let rate = "\(Int(ours.offered / 1000))k/s"
            result.metrics.append(BenchMetric("rollcall CPU per delivery at \(rate)", ours.cpuMicrosPerDelivery, "µs"))
            result.metrics.append(BenchMetric("mosquitto CPU per delivery at \(rate)", theirs.cpuMicrosPerDelivery, "µs"))
            if theirs.cpuMicrosPerDelivery > 0 {
                result.metrics.append(BenchMetric("rollcall ÷ mosquitto at \(rate)", ours.cpuMicrosPerDelivery / theirs.cpuMicrosPerDelivery,
                                                  "", atMost: targetRatio))
            }
            if let failure = ours.failure(maxLagSeconds: maxLag) {
                result.notes.append("Rollcall at \(rate) not sustained: \(failure).")
            }
            result.metrics.append(BenchMetric("rollcall delivered at \(rate)", ours.deliveriesPerSecond, "/s"))
            result.metrics.append(BenchMetric("mosquitto delivered at \(rate)", theirs.deliveriesPerSecond, "/s"))
            result.metrics.append(BenchMetric("rollcall lost at \(rate)", Double(max(0, ours.expected - ours.delivered)), "", atMost: 0))
            result.metrics.append(BenchMetric("mosquitto lost at \(rate)", Double(theirs.lost)))
        }
        // Both brokers spend a whole core from ~100k deliveries/s up (Rollcall packs more
        // objects per frame as the load grows, mosquitto queues), so at a matched rate the CPU
        // per delivery of each is ≈ 1 core ÷ the rate it delivers: the comparison that does not
        // depend on the chosen rate is at Rollcall's highest sustained one, where mosquitto is
        // offered the same load (BENCHMARKS.md, Issue 16 §1c).
        let sustained = pairs.filter { $0.rollcall.failure(maxLagSeconds: maxLag) == nil }
        if let top = sustained.max(by: { $0.rollcall.offered < $1.rollcall.offered }), top.mosquitto.cpuMicrosPerDelivery > 0 {
            let rate = "\(Int(top.rollcall.offered / 1000))k/s"
            result.metrics.append(BenchMetric("rollcall ÷ mosquitto at Rollcall's highest sustained rate (\(rate))",
                                              top.rollcall.cpuMicrosPerDelivery / top.mosquitto.cpuMicrosPerDelivery, "", atMost: targetRatio))
        }
        if let mosquittoTop = pairs.map(\.mosquitto.deliveriesPerSecond).max(), mosquittoTop > 0,
           let rollcallTop = sustained.map(\.rollcall.deliveriesPerSecond).max() {
            result.metrics.append(BenchMetric("mosquitto highest delivered rate during a step", mosquittoTop, "/s"))
            result.metrics.append(BenchMetric("rollcall highest sustained rate", rollcallTop, "/s"))
        }
        result.chartTitle = "fanout: Rollcall vs mosquitto 2.0 (WebSocket), \(receivers) receivers, 100-byte messages"
        result.xLabel = "offered deliveries/s (thousands)"
        result.yLabel = "broker CPU per delivery (µs)"
        result.series = [
            BenchSeries(name: "rollcall", points: pairs.map { [$0.rollcall.offered / 1000, $0.rollcall.cpuMicrosPerDelivery] }),
            BenchSeries(name: "mosquitto", points: pairs.map { [$0.mosquitto.offered / 1000, $0.mosquitto.cpuMicrosPerDelivery] }),
        ]
        result.notes += [
            "Same receivers for both: plain sockets on epoll (RawSocketPool). Rollcall: join with messages only, 100-byte JSON message, publisher window \(window), requestsPerSecond lifted. mosquitto: subprotocol mqtt, MQTT 3.1.1 CONNECT (clean session, keepalive 0), SUBSCRIBE QoS 0, QoS 0 PUBLISH of 100-byte payloads, max_queued_messages 10,000,000, max_queued_bytes 0.",
            "Each rate runs on Rollcall, then on mosquitto (both brokers hold their idle receivers throughout). CPU per delivery = Δ utime+stime (/proc/PID/stat) over the step and its drain ÷ deliveries counted. mosquitto losses = QoS 0 publishes sent × receivers − PUBLISH packets counted.",
            "Steps: " + pairs.map { "\(Int($0.rollcall.offered / 1000))k rollcall \(BenchMetric.format($0.rollcall.cpuMicrosPerDelivery)) µs / mosquitto \(BenchMetric.format($0.mosquitto.cpuMicrosPerDelivery)) µs" }.joined(separator: ", "),
        ]
        return result
    }
}
