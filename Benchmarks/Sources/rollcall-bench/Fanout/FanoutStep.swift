import Foundation

/// What one step of the ramp measured, and whether the broker kept up with it.
struct FanoutStep {
    /// Offered deliveries per second (publishes per second × receivers).
    let offered: Double
    /// Offered publishes per second.
    let publishRate: Double
    /// Seconds of publishing.
    let seconds: Double
    /// Publishes acknowledged with `recipients` (during the step and its drain).
    let acked: Int
    /// Publishes refused (e.g. `RATE_LIMITED`) or answered without `recipients`.
    let rejected: Int
    /// Deliveries the acknowledged publishes promised, and deliveries counted.
    let expected: Int
    let delivered: Int
    /// Deliveries counted per second of publishing (over the publishing window only).
    let deliveriesPerSecond: Double
    /// Broker CPU seconds over the step and its drain, per delivery, in µs.
    let cpuMicrosPerDelivery: Double
    /// Bytes the plain-socket receivers read over the step and its drain, per delivery (what the
    /// broker sent them on the wire: framing included, compressed with permessage-deflate; 0
    /// with lws receivers).
    let bytesPerDelivery: Double
    /// Objects per WebSocket frame the broker wrote (from /metrics; 0 when unknown).
    let objectsPerFrame: Double
    /// Share of that CPU spent in the kernel (stime).
    let kernelShare: Double
    /// Broker CPU use over the publishing window (1.0 = one core).
    let brokerCores: Double
    /// This bench process's CPU use over the publishing window (the clients).
    let clientCores: Double
    /// How far the receivers were behind at the end of publishing, in seconds of deliveries.
    let lagSeconds: Double
    /// Receivers closed during the step (slow-consumer cuts among them).
    let receiverCloses: Int
    let slowConsumerCuts: Int
    /// Publishes the schedule asked for and publishes sent (short when the window was full).
    let scheduled: Int
    let sent: Int

    /// Why the step does not count as sustained; nil when it does.
    func failure(maxLagSeconds: Double) -> String? {
        if receiverCloses > 0 { return "\(receiverCloses) receivers closed (\(slowConsumerCuts) slow-consumer cuts)" }
        if rejected > 0 { return "\(rejected) publishes refused" }
        if delivered != expected { return "\(delivered) of \(expected) deliveries arrived" }
        if Double(sent) < 0.95 * Double(scheduled) { return "publisher sent \(sent) of \(scheduled) (window full)" }
        if deliveriesPerSecond < 0.95 * offered {
            return String(format: "delivered %.0f/s of %.0f/s offered", deliveriesPerSecond, offered)
        }
        if lagSeconds > maxLagSeconds { return String(format: "receivers %.2f s behind", lagSeconds) }
        return nil
    }

    /// One progress/summary line.
    var line: String {
        String(format: "offered %7.0f/s (%6.1f pub/s): delivered %7.0f/s, %.3f µs broker CPU/delivery (%.0f%% kernel), %.1f objects/frame, %.1f B/delivery, broker %.0f%% of a core, clients %.0f%%, lag %.3f s, %d/%d delivered",
               offered, publishRate, deliveriesPerSecond, cpuMicrosPerDelivery, kernelShare * 100, objectsPerFrame, bytesPerDelivery, brokerCores * 100, clientCores * 100, lagSeconds, delivered, expected)
    }
}
