import Crypto

/// The `Rollcall-Signature` header of a webhook POST (PROTOCOL §11):
/// `t=<sentAt>,v1=<hex HMAC-SHA256(secret, "<sentAt>.<body>")>`, with one `v1` per secret
/// (1.2, `webhooks.secrets`: `t=<sentAt>,v1=<hex>,v1=<hex>…`) so that a receiver rotating its
/// secret accepts a batch signed with either.
public enum WebhookSignature {
    /// The header value for `body` sent at `sentAt` (Unix ms) and signed with `secret`.
    public static func header(secret: String, sentAt: Int64, body: [UInt8]) -> String {
        header(secrets: [secret], sentAt: sentAt, body: body)
    }

    /// The header value signed with each of `secrets`, in order (a repeated secret signs once).
    public static func header(secrets: [String], sentAt: Int64, body: [UInt8]) -> String {
        var seen = Set<String>()
        let signatures = secrets.filter { seen.insert($0).inserted }.map { "v1=" + hex(secret: $0, sentAt: sentAt, body: body) }
        return (["t=\(sentAt)"] + signatures).joined(separator: ",")
    }

    /// The lowercase hex HMAC-SHA256 of `"<sentAt>.<body>"` under `secret`.
    public static func hex(secret: String, sentAt: Int64, body: [UInt8]) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
        hmac.update(data: Array("\(sentAt).".utf8))
        hmac.update(data: body)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in hmac.finalize() {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
