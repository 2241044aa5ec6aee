import RollcallCore
import RollcallProtocol

/// The body of one webhook POST: `{"id","sentAt","node","events":[...]}`, where each event is
/// the core's encoded object with `"id":"…"` spliced in after its opening brace (the rest of
/// its bytes are copied as they are, so a `presence` event is byte for byte what clients got
/// plus its id).
enum WebhookBatchBody {
    /// The encoded body of `batch` sent at `sentAt` (Unix ms) by node `node`.
    static func encode(_ batch: WebhookDelivery.Batch, sentAt: Int64, node: String) -> [UInt8] {
        var head = JSONWriter(capacity: 96)
        head.beginObject()
        head.key("id"); head.string(batch.id)
        head.key("sentAt"); head.int(Int(sentAt))
        head.key("node"); head.string(node)
        head.key("events")
        var body = head.bytes
        body.reserveCapacity(body.count + 2 + batch.events.reduce(0) { $0 + $1.bytes.count + $1.id.utf8.count + 10 })
        body.append(UInt8(ascii: "["))
        for (index, event) in batch.events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: withID(event.id, event.bytes))
        }
        body.append(contentsOf: Array("]}".utf8))
        return body
    }

    /// `{"id":"<id>",` followed by `event` without its opening brace.
    static func withID(_ id: String, _ event: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: id.utf8.count + 8)
        writer.string(id)
        var out: [UInt8] = Array(#"{"id":"#.utf8)
        out.reserveCapacity(out.count + writer.bytes.count + event.count)
        out.append(contentsOf: writer.bytes)
        if event.count > 2 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: event.dropFirst())
        return out
    }
}
