import RollcallCore
@testable import RollcallRedisEngine

extension ClusterKeys {
    /// The first `count` of `user0`, `user1`, … that sit in distinct key groups (fewer when the
    /// first 500 names do not cover that many groups).
    func usersInDistinctGroups(count: Int) -> [String] {
        var seen = Set<Int>(), users: [String] = []
        for index in 0..<500 where users.count < count {
            let name = "user\(index)"
            if seen.insert(userGroup(Name(unchecked: name))).inserted { users.append(name) }
        }
        return users
    }
}
