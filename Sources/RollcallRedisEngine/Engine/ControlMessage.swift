import RollcallCore
import RollcallProtocol

/// A message on a node's control channel (`<prefix>{n:<nodeId>}n`,
/// ``ClusterKeys/controlChannel(of:)``): what one node asks another (or itself, `held`) to do
/// with a session it holds. Nodes publish them, right after the answer of the script that
/// decided them (``ClusterSessions/tell(node:_:)``); the wire form is text, read and written
/// here only.
enum ControlMessage: Equatable {
    /// `adopted <id> <token hash>`: another node resumed the session from the resume token
    /// with that hash; this node forgets its copy if it still has that token (a copy it has
    /// resumed since, under a new token, is not the one adopted: the message came late).
    case adopted(sessionId: String, tokenHash: String)
    /// `held <id>`: Redis ran this node's hold of the session (the node publishes it once the
    /// `session.hold` script answered, so on one Redis it comes after every message published
    /// before the hold); the node hands over what it kept.
    case held(sessionId: String)
    /// `end <id> <code>` or `end <id> 4403 <reason…>`: end the session here and close its
    /// connection with the code (4409 as a close frame; 4403 as `logout`, with the reason).
    case end(sessionId: String, code: CloseCode, reason: String?)

    /// The session the message is about.
    var sessionId: String {
        switch self {
        case .adopted(let id, _), .held(let id), .end(let id, _, _): id
        }
    }

    /// Reads a control payload; nil for one this node does not know.
    init?(payload: [UInt8]) {
        let text = String(decoding: payload, as: UTF8.self)
        let words = text.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard words.count >= 2, !words[1].isEmpty else { return nil }
        switch words[0] {
        case "adopted":
            self = .adopted(sessionId: words[1], tokenHash: words.count > 2 ? words[2] : "")
        case "held":
            self = .held(sessionId: words[1])
        case "end":
            let code = words.count > 2 ? UInt16(words[2]).flatMap(CloseCode.init(rawValue:)) ?? .sessionLimit : .sessionLimit
            self = .end(sessionId: words[1], code: code, reason: words.count > 3 ? words[3] : nil)
        default:
            return nil
        }
    }

    /// The payload to publish.
    var payload: String {
        switch self {
        case .adopted(let id, let tokenHash):
            "adopted \(id) \(tokenHash)"
        case .held(let id):
            "held \(id)"
        case .end(let id, let code, let reason):
            "end \(id) \(code.rawValue)" + (reason.map { " " + $0 } ?? "")
        }
    }
}
