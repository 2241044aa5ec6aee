import Foundation
import RollcallClient

// Uses the client the way an app would, without connecting anywhere: a session on the
// platform's transport, and a typed event decoded from the wire's JSON with Foundation.
let session = RollcallSession(url: "ws://127.0.0.1:8080/v1")
print("consumer: a session for \(session.url) over \(session.transport.name)")
let wire = Data(#"{"event":"presence","type":"join","channel":"lobby","publisher":"bob","seq":2,"state":{"mood":"ok"}}"#.utf8)
guard case .presence(let join) = try JSONDecoder().decode(RollcallEvent.self, from: wire) else {
    fatalError("consumer: not a presence event")
}
var roster = Roster(ChannelRef("lobby"))
roster.apply(join)
print("consumer: \(join.publisher ?? "?") \(join.type) \(join.channel); roster \(roster.sortedMembers.map(\.userId))")
session.close()
