import RollcallCore

/// The check `rollcall --check-config` runs on `auth.jwksFile` (jwt mode): the file is read
/// and must hold a JWK Set with a usable key, as at start (PROTOCOL §3, 1.2). `auth.jwksUrl`
/// is not fetched by the check.
public enum KeySetFiles {
    /// Throws ``ServerError/Code/keySetUnavailable``, naming `auth.jwksFile` and the path, when
    /// the file cannot be used; nothing to do outside jwt mode or without the key.
    public static func check(_ auth: Configuration.Auth) throws(ServerError) {
        guard auth.mode == .jwt, let path = auth.jwksFile else { return }
        _ = try KeyFileWatcher.start(path: path)
    }
}
