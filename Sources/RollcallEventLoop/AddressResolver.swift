import Foundation

/// Turns a host name into a numeric address with the system's blocking `getaddrinfo`: on a
/// thread that may wait (``BackgroundResolver``'s, or once at start for `webhooks.url`, which
/// libwebsockets 4.1 would otherwise resolve synchronously at every connection), never on a
/// service loop.
public enum AddressResolver {
    /// True when `host` is not an IPv4 or IPv6 literal.
    public static func isName(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) != 1 && inet_pton(AF_INET6, host, &v6) != 1
    }

    /// `host` itself when it is a literal, else its first address (IPv4 preferred); nil when it
    /// does not resolve.
    public static func numericAddress(for host: String) -> String? {
        guard isName(host) else { return host }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var chosen: UnsafeMutablePointer<addrinfo>? = first
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if entry.pointee.ai_family == AF_INET { chosen = entry; break }
            cursor = entry.pointee.ai_next
        }
        guard let entry = chosen, let address = entry.pointee.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, entry.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return String(cString: text)
    }
}
