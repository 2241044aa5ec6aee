/// The broker's version, as the server API's `getInfo` reports it (PROTOCOL §10). The major
/// and minor parts are the wire protocol's version.
public enum BrokerVersion {
    /// `1.2.0`.
    public static let current = "1.2.0"
}
