import Foundation

/// A reply line read on a plain socket (storm, latency), recognised by its first bytes without
/// a JSON parse: `{"id":N,"ok":true…` (the broker writes `id` first and `ok` right after it).
enum RawReplyLine {
    private static let replyPrefix = Array(#"{"id":"#.utf8)
    private static let okTrue = Array(#""ok":true"#.utf8)

    /// The request id and whether it succeeded; nil when `line` is not a reply.
    static func parse(_ line: UnsafeRawBufferPointer) -> (id: Int, ok: Bool)? {
        guard RawEventLine.starts(line, with: replyPrefix), let base = line.baseAddress else { return nil }
        var id = 0
        var index = replyPrefix.count
        while index < line.count, line[index] >= 48, line[index] <= 57 {
            id = id * 10 + Int(line[index]) - 48
            index += 1
        }
        let ok = index + 1 + okTrue.count <= line.count && memcmp(base + index + 1, okTrue, okTrue.count) == 0
        return (id, ok)
    }
}
