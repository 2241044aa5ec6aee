import RollcallProtocol

/// Why the transport could not start. `code` is stable; the description is for people.
public typealias ServerError = CodedError<ServerErrorCode>

/// The stable codes of a ``ServerError``.
public enum ServerErrorCode: String, StableErrorCode {
    /// `start()` was called twice.
    case alreadyStarted = "ALREADY_STARTED"
    /// libwebsockets refused to create the context (address in use, bad interface, ...).
    case listenFailed = "LISTEN_FAILED"
    /// `tls.certFile` or `tls.keyFile` is missing, unreadable or not valid PEM (the
    /// message names the key and the file), or libwebsockets refused them.
    case tlsFileInvalid = "TLS_FILE_INVALID"
    /// The webhook sender could not be set up (`webhooks.caFile` unreadable, no secret,
    /// libwebsockets refused its client vhost).
    case webhookSetupFailed = "WEBHOOK_SETUP_FAILED"
    /// *(1.2)* `auth.jwksFile` or `auth.jwksUrl` could not be read or fetched at start, or
    /// does not hold a JWK Set with a usable key (the message names the key).
    case keySetUnavailable = "KEY_SET_UNAVAILABLE"
}
