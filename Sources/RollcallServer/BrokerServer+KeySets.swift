import Foundation
import RollcallCore

/// JWK Sets (PROTOCOL §3, 1.2): ``KeySetService`` lives on the service thread beside the
/// connections and hands every set that loads to the core (``InboundEvent/keySet(_:_:)``).
extension BrokerServer {
    /// The key sets of jwt mode, or nil when neither `auth.jwksFile` nor `auth.jwksUrl` is set
    /// (or `auth.mode` is `none`). Reads the file now; throws, naming the key, when it cannot
    /// be used. Service thread, once the context exists.
    func makeKeySets(context: OpaquePointer) throws(ServerError) -> KeySetService? {
        let auth = configuration.auth
        guard auth.mode == .jwt, auth.hasKeySet else { return nil }
        let service = try KeySetService(auth: auth, context: context, logger: logger) { [unowned self] source, set in
            feed(.keySet(source, set))
        }
        service.firstFetchDone = { [lifecycle] error in lifecycle.keySetFetched(error) }
        return service
    }
}
