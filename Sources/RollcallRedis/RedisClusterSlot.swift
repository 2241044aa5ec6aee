/// The hash slot of a key in Redis Cluster: CRC16 (XMODEM: polynomial 0x1021, initial value 0)
/// of the key modulo 16384. When the key holds a `{`, and a `}` after it with at least one byte
/// between them, only those bytes (the hash tag, up to the first `}` after the first `{`) are
/// hashed, so keys that share a tag share a slot.
public enum RedisClusterSlot {
    /// The number of slots of a Redis Cluster.
    public static let count = 16384

    /// The slot of `key` (binary-safe).
    public static func of(_ key: [UInt8]) -> Int {
        Int(crc16(hashed(key)) & 0x3FFF)
    }

    /// The slot of a text key (UTF-8).
    public static func of(_ key: String) -> Int { of(Array(key.utf8)) }

    /// The one slot all `keys` share; nil when there are none; throws ``RedisError/Code/crossSlot``
    /// when two differ (Redis would answer `CROSSSLOT`).
    public static func shared(by keys: [[UInt8]]) throws(RedisError) -> Int? {
        guard let first = keys.first else { return nil }
        let slot = of(first)
        for key in keys.dropFirst() where of(key) != slot {
            throw RedisError(.crossSlot, "the keys \(printable(first)) (slot \(slot)) and \(printable(key)) (slot \(of(key))) hash to different slots: put them under one {hash tag}")
        }
        return slot
    }

    /// The bytes of `key` that are hashed: its hash tag, or the whole key.
    static func hashed(_ key: [UInt8]) -> ArraySlice<UInt8> {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")),
              let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")),
              close > open + 1
        else { return key[...] }
        return key[(open + 1)..<close]
    }

    /// CRC16/XMODEM, bit by bit (a key is short; a table buys nothing measurable here).
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    private static func printable(_ key: [UInt8]) -> String {
        "\"" + String(decoding: key.prefix(80), as: UTF8.self) + (key.count > 80 ? "…" : "") + "\""
    }
}
