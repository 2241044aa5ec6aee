import RollcallProtocol

extension JSONObject {
    /// The first member name that occurs twice (compared byte for byte), or nil. A token or a
    /// key that names a member twice is refused rather than guessed at: parsers disagree on
    /// which occurrence wins.
    var repeatedMemberName: String? {
        var seen = Set<[UInt8]>()
        return members.first { !seen.insert(Array($0.key.utf8)).inserted }?.key
    }
}
