import Foundation
import RollcallClient

/// What a raw storm client does with one line: events go to its roster (a truncated snapshot
/// asks for the first `getOnlineUsers` page), replies are counted by request id (1 login,
/// 2 join, 3 leave, 100 and up pages, each page asking for the next).
enum StormRawLine {
    private static let eventPrefix = Array(#"{"event":"#.utf8)

    static func handle(_ line: UnsafeRawBufferPointer, client: StormClient, socket: RawWebSocket, channel: String,
                       counters: Counters) {
        if RawEventLine.starts(line, with: eventPrefix) {
            if case .fetchPage(let page) = client.receive(line) {
                requestPage(page, id: 100, socket: socket, channel: channel)
            }
            return
        }
        guard let (id, ok) = RawReplyLine.parse(line) else { return }
        switch id {
        case 1: counters.add(ok ? "loginOK" : "loginFailed")
        case 2: counters.add(ok ? "joinOK" : "joinFailed")
        case 3: counters.add(ok ? "leaveOK" : "leaveFailed")
        default:
            guard id >= 100 else { return }
            guard ok else {
                counters.add("pageFailed")
                return
            }
            counters.add("pages")
            if case .fetchPage(let page) = client.mergePage(line) {
                requestPage(page, id: id + 1, socket: socket, channel: channel)
            }
        }
    }

    /// `getOnlineUsers` for the next page (the cursor is sent back as the broker wrote it).
    private static func requestPage(_ page: String, id: Int, socket: RawWebSocket, channel: String) {
        socket.send(text: #"{"id":\#(id),"op":"getOnlineUsers","channel":"\#(channel)","page":"\#(page)","pageSize":1000,"includeState":true}"#)
    }
}
