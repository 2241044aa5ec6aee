import RollcallCore

/// Users split by key group (``KeyGroups``), for a reader that sends one script per group
/// (each on its group's slot) and merges the answers back into the users' order.
struct UsersByGroup {
    /// The groups met, in order of first appearance, each with its users in their order.
    let groups: [(group: Int, users: [Name])]
    /// For each user of the input, its group's index in ``groups`` and its place there.
    private let places: [(group: Int, index: Int)]

    /// `users` split by `groupOf`.
    init(_ users: [Name], groupOf: (Name) -> Int) {
        var groups: [(group: Int, users: [Name])] = []
        var indexOfGroup: [Int: Int] = [:]
        var places: [(group: Int, index: Int)] = []
        places.reserveCapacity(users.count)
        for user in users {
            let group = groupOf(user)
            let at = indexOfGroup[group] ?? {
                groups.append((group, []))
                indexOfGroup[group] = groups.count - 1
                return groups.count - 1
            }()
            places.append((at, groups[at].users.count))
            groups[at].users.append(user)
        }
        self.groups = groups
        self.places = places
    }

    /// The answers per group (`answers[i]` for ``groups``[i], one element per user, possibly
    /// short) back in the users' order, each made by `make(user, its element or nil)`.
    func merged<Element, Value>(_ answers: [[Element]], _ make: (Name, Element?) -> Value) -> [Value] {
        places.map { place in
            let user = groups[place.group].users[place.index]
            let elements = place.group < answers.count ? answers[place.group] : []
            return make(user, place.index < elements.count ? elements[place.index] : nil)
        }
    }
}
