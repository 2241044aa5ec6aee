import RollcallCore

/// One HTTP request in progress on a connection, kept by the server under the connection's
/// lws per-connection key until the response is out.
enum HTTPExchange {
    /// Reading the body of `request` (its head is known) for the router's `route`; a reader
    /// that overflowed keeps nothing, and the 413 goes out when the body ends.
    case readingBody(request: HTTPRequest, route: Int, reader: HTTPBodyReader)
    /// A server API request handed to the core as ``RollcallCore/InboundEvent/api(_:op:body:)``;
    /// waits for its ``RollcallCore/Action/respond(_:status:body:)``.
    case awaitingAnswer(APIRequestID)
    /// The core's answer arrived: headers and body go out at the next writable callback.
    case answering(HTTPResponse)
    /// The headers are written; `body` goes out at the next writable callback. With
    /// `closeAfter` the connection then closes (the request's body was not read).
    case writing(body: [UInt8], closeAfter: Bool)
    /// The response is out and the connection is closing: the rest of the request body is
    /// read and dropped until it ends or ``ConnectionLifecycle/lingerSeconds`` pass, so the kernel
    /// does not reset the connection over unread input before the peer has read the answer.
    case discardingBody
}

/// Where the answer to a server API request goes: the connection, and its exchange's key in
/// the server's table (the exchange is gone once the client hung up).
struct PendingAPIExchange {
    let wsi: OpaquePointer
    let key: UInt64
}
