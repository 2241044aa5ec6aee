import Foundation

/// Fills a ``BrokerCPUCurve``: reads the broker's CPU from `/proc` each time another `every`
/// messages have been answered (a few dozen reads a run, not one per message).
struct CurveSampler {
    let pid: Int32
    /// The broker's CPU at the first publish; samples are taken relative to it.
    let cpuBefore: CPUTimes
    let every: Int
    private(set) var curve = BrokerCPUCurve()
    private var nextMark: Int

    init(pid: Int32, cpuBefore: CPUTimes, every: Int) {
        self.pid = pid
        self.cpuBefore = cpuBefore
        self.every = max(1, every)
        nextMark = self.every
    }

    /// Records a sample when `answered` reached the next mark.
    mutating func sampleIfDue(answered: Int) {
        guard answered >= nextMark, let cpu = CPUTimes.read(pid: pid) else { return }
        curve.record(messages: answered, cpuSeconds: (cpu - cpuBefore).total)
        nextMark = (answered / every + 1) * every
    }
}
