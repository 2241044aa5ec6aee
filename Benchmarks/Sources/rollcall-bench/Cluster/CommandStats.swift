/// `INFO commandstats` of Redis, parsed: per command, calls and microseconds.
struct CommandStats {
    /// One `cmdstat_<name>` line.
    struct Entry: Codable {
        var calls = 0
        var usec = 0
    }

    private(set) var entries: [String: Entry] = [:]

    /// Parses lines like `cmdstat_evalsha:calls=12,usec=345,usec_per_call=28.75,…`.
    init(info: String) {
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[line.index(line.startIndex, offsetBy: 8)..<colon])
            var entry = Entry()
            for field in line[line.index(after: colon)...].split(separator: ",") {
                let pair = field.split(separator: "=", maxSplits: 1)
                guard pair.count == 2 else { continue }
                if pair[0] == "calls" { entry.calls = Int(pair[1]) ?? 0 }
                if pair[0] == "usec" { entry.usec = Int(pair[1]) ?? 0 }
            }
            entries[name] = entry
        }
    }

    init() {}

    subscript(name: String) -> Entry { entries[name] ?? Entry() }

    /// Adds `entry`'s calls and microseconds to the command `name`'s.
    mutating func add(_ name: String, _ entry: Entry) {
        entries[name, default: Entry()].calls += entry.calls
        entries[name, default: Entry()].usec += entry.usec
    }

    /// Microseconds of every command except `skip`.
    func usec(excluding skip: Set<String>) -> Int {
        entries.filter { !skip.contains($0.key) }.reduce(0) { $0 + $1.value.usec }
    }
}
