import RollcallCore
@testable import RollcallRedisEngine
import Testing

@Suite("Cluster: users split by key group and merged back")
struct UsersByGroupTests {
    @Test("users keep their order within each group, groups come in order of first appearance, and answers merge back into the users' order")
    func splitsAndMerges() {
        let users = ["a1", "b1", "a2", "c1", "b2"].map { Name(unchecked: $0) }
        let split = UsersByGroup(users) { Int($0.string.unicodeScalars.first!.value) }
        #expect(split.groups.map { $0.users.map(\.string) } == [["a1", "a2"], ["b1", "b2"], ["c1"]])
        let answers = split.groups.map { group in group.users.map { $0.string.uppercased() } }
        #expect(split.merged(answers) { user, element in element ?? "-" + user.string } == ["A1", "B1", "A2", "C1", "B2"])
    }

    @Test("a group's short answer leaves its missing users to the fallback; no users, no groups")
    func shortAnswersAndNoUsers() {
        let users = ["a1", "a2", "b1"].map { Name(unchecked: $0) }
        let split = UsersByGroup(users) { Int($0.string.unicodeScalars.first!.value) }
        #expect(split.merged([["A1"]]) { user, element in element ?? "?" + user.string } == ["A1", "?a2", "?b1"])
        #expect(UsersByGroup([], groupOf: { _ in 0 }).groups.isEmpty)
    }
}
