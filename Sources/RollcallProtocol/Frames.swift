/// Builders for the broker's outbound objects: replies and events (PROTOCOL §2).
public enum Frames {
    /// `{"id":…,"ok":true,"result":{…}}`.
    public static func success(id: JSON, result: JSON) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("id"); writer.value(id)
        writer.key("ok"); writer.bool(true)
        writer.key("result"); writer.value(result)
        writer.endObject()
        return writer.bytes
    }

    /// `{"id":…,"ok":false,"error":{"code":…,"message":…[,"retryAfterMs":…]}}`.
    public static func failure(id: JSON, code: ErrorCode, message: String, retryAfterMs: Int? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.key("id"); writer.value(id)
        writer.key("ok"); writer.bool(false)
        writer.key("error")
        writer.beginObject()
        writer.key("code"); writer.string(code.rawValue)
        writer.key("message"); writer.string(message)
        if let retryAfterMs { writer.key("retryAfterMs"); writer.int(retryAfterMs) }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// An event object; `build` writes the members after `"event":name`.
    public static func event(_ name: String, capacity: Int = 128, _ build: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(capacity: capacity)
        writer.beginObject()
        writer.key("event"); writer.string(name)
        build(&writer)
        writer.endObject()
        return writer.bytes
    }
}
