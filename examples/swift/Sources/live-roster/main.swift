import Foundation
import RollcallClient

// live-roster [ws://127.0.0.1:8080/v1] [channel] [userId]: joins the channel and prints
// its roster after every change; reconnects, resumes and rejoins on its own.
let arguments = CommandLine.arguments.dropFirst()
let url = arguments.first ?? "ws://127.0.0.1:8080/v1"
let channel = ChannelRef(arguments.dropFirst().first ?? "lobby")
let userId = arguments.dropFirst(2).first ?? "roster-\(getpid())"

let session = RollcallSession(url: url)
Task {
    for await state in session.states { print("[\(state)]") }
}
do {
    try await session.connect()
    try await session.login(userId: userId, platform: "cli")
    let joined = try await session.join(channel, messages: false)
    print("joined \(channel.channel) as \(userId): occupancy \(joined.occupancy), mode \(joined.mode)")
} catch {
    print("error \(error)")
    exit(1)
}

for await update in session.rosterUpdates(of: channel) {
    let roster = update.roster
    let names = roster.sortedMembers.map { member in
        member.state.isEmpty ? member.userId
            : member.userId + " " + member.state.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
    let seq = roster.seq.map(String.init) ?? "?"
    print("\(update.cause) [\(update.status)]: \(roster.count) online (\(roster.mode), seq \(seq)): \(names.joined(separator: ", "))")
}
