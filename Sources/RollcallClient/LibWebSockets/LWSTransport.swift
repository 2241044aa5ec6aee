// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
/// The libwebsockets transport: one ``RollcallConnection`` on a ``ClientRuntime``'s service
/// thread per link. Events come from that thread, in order.
final class LWSTransport: WebSocketTransport {
    let connection: RollcallConnection

    init(url: String, options: TransportOptions, runtime: ClientRuntime) throws(ClientError) {
        connection = try RollcallConnection(url: url, subprotocol: options.subprotocol, runtime: runtime,
                                            allowSelfSignedCertificate: options.allowSelfSignedCertificate,
                                            permessageDeflate: options.permessageDeflate)
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) {
        let connection = connection
        connection.onOpen = { handler(.opened(extensions: connection.negotiatedExtensions)) }
        connection.onMessage = { handler(.message($0)) }
        connection.onClose = { info in
            let opened = connection.cond.withLock { connection.connectError == nil }
            handler(.closed(info, failure: opened ? nil : .connectFailed(connection.connectError ?? info.description)))
            // The handlers capture the connection: release them to end the cycle.
            connection.onOpen = nil
            connection.onMessage = nil
            connection.onClose = nil
        }
        connection.start()
    }

    func send(text: [UInt8]) { connection.enqueue(.text(text)) }

    func close(code: UInt16, reason: String) { connection.close(code: code, reason: reason) }

    func abort() { connection.drop() }
}

extension TransportFactory {
    /// libwebsockets on `runtime`'s service thread (Linux; the package's `LibWebSockets` trait).
    public static func libwebsockets(runtime: ClientRuntime = .shared) -> TransportFactory {
        TransportFactory(name: "libwebsockets") { url, options throws(ClientError) in
            try LWSTransport(url: url, options: options, runtime: runtime)
        }
    }
}
#endif
