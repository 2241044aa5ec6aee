import Crypto

/// A Lua script run with `EVALSHA`, loaded first on each new link of the connection
/// (``RedisConnection/load(_:)``), falling back to `EVAL` when Redis still answers `NOSCRIPT`
/// (a `SCRIPT FLUSH` while the link stayed up): `EVAL` also caches the script, so the next
/// run is an `EVALSHA` again.
public struct RedisScript: Equatable {
    /// The Lua source.
    public let source: String
    /// Its SHA-1 in lowercase hex, as Redis names it.
    public let sha1: String

    /// A script from its Lua source.
    public init(_ source: String) {
        self.source = source
        sha1 = Insecure.SHA1.hash(data: Array(source.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Runs the script on `connection` with `keys` (`KEYS[1...]`) and `arguments` (`ARGV[1...]`).
    public func run(on connection: RedisConnection, keys: [[UInt8]] = [], arguments: [[UInt8]] = [],
                    completion: @escaping RedisConnection.Completion) {
        let tail = [Array(String(keys.count).utf8)] + keys + arguments
        connection.load(self)
        connection.send([Array("EVALSHA".utf8), Array(sha1.utf8)] + tail) { result in
            guard case .failure(let error) = result, error.code == .errorReply, error.message.hasPrefix("NOSCRIPT") else {
                completion(result)
                return
            }
            connection.send([Array("EVAL".utf8), Array(source.utf8)] + tail, completion: completion)
        }
    }

    /// ``run(on:keys:arguments:completion:)`` with text keys and arguments (UTF-8).
    public func run(on connection: RedisConnection, keys: [String], arguments: [String] = [],
                    completion: @escaping RedisConnection.Completion) {
        run(on: connection, keys: keys.map { Array($0.utf8) }, arguments: arguments.map { Array($0.utf8) },
            completion: completion)
    }
}
