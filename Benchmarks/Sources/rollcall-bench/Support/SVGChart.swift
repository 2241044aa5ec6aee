import Foundation

/// A dependency-free SVG line chart of a result's series (or, without series, a bar chart of
/// its metrics as a fraction of their targets), for `--plot`.
struct SVGChart {
    let result: BenchResult
    private let width = 900.0, height = 440.0
    private let left = 80.0, right = 30.0, top = 50.0, bottom = 60.0
    private let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]

    init(result: BenchResult) { self.result = result }

    /// The SVG document.
    func render() -> String {
        var body = ""
        let title = result.chartTitle.isEmpty ? "rollcall-bench \(result.scenario)" : result.chartTitle
        body += text(width / 2, 28, title, size: 16, anchor: "middle", weight: "bold")
        if result.series.contains(where: { !$0.points.isEmpty }) { body += lines() } else { body += bars() }
        return """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif">
        <rect width="100%" height="100%" fill="white"/>
        \(body)</svg>

        """
    }

    private var plotWidth: Double { width - left - right }
    private var plotHeight: Double { height - top - bottom }

    private func lines() -> String {
        let points = result.series.flatMap(\.points)
        let maxX = max(points.map { $0[0] }.max() ?? 1, 1e-9)
        let maxY = niceCeiling(max(points.map { $0[1] }.max() ?? 1, 1e-9))
        var out = axes(maxX: maxX, maxY: maxY)
        for (index, series) in result.series.enumerated() {
            let color = palette[index % palette.count]
            let path = series.points.map { point in
                String(format: "%.1f,%.1f", left + point[0] / maxX * plotWidth, top + plotHeight - point[1] / maxY * plotHeight)
            }.joined(separator: " ")
            out += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            out += "<rect x=\"\(Int(left + 10))\" y=\"\(Int(top + 8 + Double(index) * 18))\" width=\"12\" height=\"12\" fill=\"\(color)\"/>\n"
            out += text(left + 28, top + 18 + Double(index) * 18, series.name, size: 12)
        }
        return out
    }

    private func bars() -> String {
        let metrics = result.metrics.filter { $0.target != nil }
        guard !metrics.isEmpty else { return text(width / 2, height / 2, "no data", size: 14, anchor: "middle") }
        var out = ""
        let rowHeight = min(40.0, plotHeight / Double(metrics.count))
        out += text(16, top - 6, "value as a share of its target (dashed line = the target; for ≤ targets shorter is better)", size: 11)
        let scaleMax = max(2.0, metrics.map { ratio($0) }.max() ?? 1)
        // Labels are right-aligned before the bars: room for the longest (about 6 px a character).
        let longest = Double(metrics.map(\.name.count).max() ?? 20)
        let x1 = min(width * 0.6, 16 + longest * 6)
        let barSpace = width - right - x1 - 150
        for (index, metric) in metrics.enumerated() {
            let y = top + Double(index) * rowHeight + 6
            let share = ratio(metric)
            let color = (metric.met ?? true) ? "#2ca02c" : "#d62728"
            out += text(x1 - 6, y + rowHeight * 0.45, metric.name, size: 11, anchor: "end")
            out += String(format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%@\"/>\n",
                          x1, y, max(1, share / scaleMax * barSpace), rowHeight * 0.6, color)
            out += text(x1 + max(1, share / scaleMax * barSpace) + 4, y + rowHeight * 0.45,
                        "\(BenchMetric.format(metric.value)) \(metric.unit) (\(metric.target ?? ""))", size: 11)
        }
        let targetX = x1 + 1 / scaleMax * barSpace
        out += String(format: "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n",
                      targetX, top, targetX, top + Double(metrics.count) * rowHeight)
        return out
    }

    /// value / target limit, so 1.0 is exactly the target.
    private func ratio(_ metric: BenchMetric) -> Double {
        guard let target = metric.target,
              let limit = Double(target.drop(while: { !$0.isNumber }).filter { $0.isNumber || $0 == "." }), limit > 0
        else { return 1 }
        return metric.value / limit
    }

    private func axes(maxX: Double, maxY: Double) -> String {
        var out = String(format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                         left, top, plotWidth, plotHeight)
        for step in 0...4 {
            let fraction = Double(step) / 4
            let y = top + plotHeight - fraction * plotHeight
            let x = left + fraction * plotWidth
            out += String(format: "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, left + plotWidth, y)
            out += text(left - 6, y + 4, BenchMetric.format(maxY * fraction), size: 11, anchor: "end")
            out += text(x, top + plotHeight + 16, BenchMetric.format(maxX * fraction), size: 11, anchor: "middle")
        }
        out += text(left + plotWidth / 2, height - 16, result.xLabel, size: 12, anchor: "middle")
        out += "<text x=\"18\" y=\"\(Int(top + plotHeight / 2))\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 18 \(Int(top + plotHeight / 2)))\">\(escape(result.yLabel))</text>\n"
        return out
    }

    private func niceCeiling(_ value: Double) -> Double {
        let magnitude = pow(10, floor(log10(value)))
        for factor in [1.0, 2, 2.5, 5, 10] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    private func text(_ x: Double, _ y: Double, _ content: String, size: Int, anchor: String = "start", weight: String = "normal") -> String {
        String(format: "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%@\" font-weight=\"%@\">%@</text>\n",
               x, y, size, anchor, weight, escape(content))
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
