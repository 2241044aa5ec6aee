/// Decides whether a `listen.host` only reaches this machine: `localhost`, any IPv4 address
/// in 127.0.0.0/8, `::1`, and IPv4-mapped `::ffff:127.x.y.z` (brackets allowed around IPv6).
/// Anything else, including names other than `localhost` and zone-qualified addresses, counts
/// as reachable from the network.
public enum LoopbackHost {
    /// True when `host` is a loopback address.
    public static func contains(_ host: String) -> Bool {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if text.lowercased() == "localhost" { return true }
        if let octets = ipv4(text) { return octets[0] == 127 }
        guard let groups = ipv6(text) else { return false }
        if groups == [0, 0, 0, 0, 0, 0, 0, 1] { return true }
        return groups[0..<5].allSatisfy { $0 == 0 } && groups[5] == 0xFFFF && groups[6] >> 8 == 127
    }

    /// The four octets of a dotted-decimal IPv4 address, or nil.
    static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            octets.append(value)
        }
        return octets
    }

    /// The eight 16-bit groups of a textual IPv6 address (with `::` and an optional trailing
    /// dotted IPv4 part), or nil.
    static func ipv6(_ text: Substring) -> [UInt16]? {
        let halves = text.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count <= 2, let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 8 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    /// Colon-separated hex groups; the last may be a dotted IPv4 address (two groups).
    private static func groups(_ text: Substring) -> [UInt16]? {
        if text.isEmpty { return [] }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        var result: [UInt16] = []
        for (index, part) in parts.enumerated() {
            if index == parts.count - 1, part.contains("."), let octets = ipv4(part) {
                result.append(UInt16(octets[0]) << 8 | UInt16(octets[1]))
                result.append(UInt16(octets[2]) << 8 | UInt16(octets[3]))
            } else {
                guard (1...4).contains(part.count), part.allSatisfy(\.isHexDigit), let value = UInt16(part, radix: 16)
                else { return nil }
                result.append(value)
            }
        }
        return result
    }
}
