/// The few MQTT 3.1.1 packets the mosquitto comparison sends (CONNECT, SUBSCRIBE, QoS 0
/// PUBLISH), encoded by hand so the same raw WebSocket client loads both brokers.
enum MQTTPacket {
    /// CONNECT with a clean session, no will, no credentials and `keepAlive` seconds.
    static func connect(clientId: String, keepAlive: UInt16 = 0) -> [UInt8] {
        var body = string("MQTT") + [4, 0x02, UInt8(keepAlive >> 8), UInt8(keepAlive & 0xFF)]
        body += string(clientId)
        return packet(0x10, body)
    }

    /// SUBSCRIBE to one topic at QoS 0.
    static func subscribe(topic: String, packetId: UInt16 = 1) -> [UInt8] {
        packet(0x82, [UInt8(packetId >> 8), UInt8(packetId & 0xFF)] + string(topic) + [0])
    }

    /// PUBLISH at QoS 0 (no packet id, no reply).
    static func publish(topic: String, payload: [UInt8]) -> [UInt8] {
        packet(0x30, string(topic) + payload)
    }

    private static func string(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    private static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        var bytes = [first]
        var length = body.count
        repeat {
            var digit = UInt8(length % 128)
            length /= 128
            if length > 0 { digit |= 0x80 }
            bytes.append(digit)
        } while length > 0
        return bytes + body
    }
}

/// Counts MQTT packets by type in a byte stream that arrives in arbitrary pieces (a WebSocket
/// message may hold several packets or part of one): reads each fixed header and its
/// remaining-length varint, then skips the body without looking at it.
struct MQTTPacketCounter {
    /// Packets seen per type (index = the type, 1...15: 2 CONNACK, 3 PUBLISH, 9 SUBACK).
    private(set) var counts = [Int](repeating: 0, count: 16)
    private var type = -1
    private var length = 0
    private var shift = 0
    private var inLength = false
    private var remaining = 0

    /// Scans one piece of the stream; returns how many PUBLISH packets ended in it.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int {
        var publishes = 0
        var index = 0
        let count = bytes.count
        while index < count {
            if remaining > 0 {
                let take = min(remaining, count - index)
                index += take
                remaining -= take
                if remaining == 0 { publishes += finish() }
            } else if type < 0 {
                type = Int(bytes[index] >> 4)
                index += 1
                inLength = true
                length = 0
                shift = 0
            } else if inLength {
                let byte = bytes[index]
                index += 1
                length |= Int(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 {
                    inLength = false
                    remaining = length
                    if remaining == 0 { publishes += finish() }
                }
            }
        }
        return publishes
    }

    private mutating func finish() -> Int {
        let finished = type
        counts[finished] += 1
        type = -1
        return finished == 3 ? 1 : 0
    }
}
