/// Glob patterns of a token's `channels` claim (PROTOCOL §3): `*` matches any run of
/// characters (including none), `?` exactly one character; everything else matches itself.
/// Characters are Unicode scalars, compared exactly.
package enum ChannelPattern {
    /// True when `name` matches `pattern`.
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        let p = Array(pattern.unicodeScalars), s = Array(name.unicodeScalars)
        var pi = 0, si = 0
        var starAt = -1, starMatch = 0
        while si < s.count {
            if pi < p.count, p[pi] == "*" {
                starAt = pi
                starMatch = si
                pi += 1
            } else if pi < p.count, p[pi] == "?" || p[pi] == s[si] {
                pi += 1
                si += 1
            } else if starAt >= 0 {
                pi = starAt + 1
                starMatch += 1
                si = starMatch
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}

extension Grant {
    /// True when the grant lets its session join, publish to or set state in `channel`.
    package func allows(channel name: Name) -> Bool {
        guard let patterns = channelPatterns else { return true }
        return patterns.contains { ChannelPattern.matches($0, name.string) }
    }

    /// Throws `FORBIDDEN` unless the grant lets its session join, publish to or set state in
    /// `key`. Both presence engines (one node and cluster) check with it.
    package func checkAccess(to key: ChannelKey) throws(BrokerError) {
        guard allows(channel: key.name) else {
            throw BrokerError(.forbidden, "the token does not allow channel \(key.name)")
        }
    }
}
