import RollcallCore
import RollcallRedis

/// One argument a Lua script takes, by name: the script's prologue reads it into a `local`
/// of that name, as a key, as text or as a number.
package struct LuaParameter: Equatable {
    /// How the prologue reads the argument.
    enum Kind: Equatable {
        /// `local name = KEYS[k]`: a key the script declares (a Redis Cluster routes the call by
        /// its keys' slot, and every key a script declares must share one).
        case key
        /// `local name = ARGV[i]`.
        case text
        /// `local name = tonumber(ARGV[i])`.
        case number
    }

    /// The Lua local's name, and the name a call passes the argument by.
    let name: String
    /// How it is read.
    let kind: Kind

    /// A key the script declares (`KEYS`).
    static func key(_ name: String) -> LuaParameter { LuaParameter(name: name, kind: .key) }
    /// A text argument.
    static func text(_ name: String) -> LuaParameter { LuaParameter(name: name, kind: .text) }
    /// A numeric argument.
    static func number(_ name: String) -> LuaParameter { LuaParameter(name: name, kind: .number) }
}

/// A Lua script of the Redis engine, with its arguments named in one place: the parameter
/// list. The Lua prologue (`local user = ARGV[9]` …) is generated from it, so no script body
/// reads `ARGV` by position, and a call passes its arguments by the same names, in the same
/// order (``command(_:rest:)``; checked in debug builds, so every test that runs a script
/// checks its call). Arguments past the named ones (a list of users, TTL operations, config
/// sections) are the *rest*: the prologue sets `local <rest> = <index of the first one>` (in
/// `ARGV`). Key parameters (``LuaParameter/key(_:)``) go to `KEYS` in their order, whatever
/// their place in the list: a call passes every argument by name in the list's order, and
/// ``arguments(_:rest:)`` puts the keys first (``StoreScript/keyCount``).
package struct LuaScript {
    /// What the core runs (`StoreCommand.script`): the name for logs and metrics, and the source.
    let store: StoreScript
    /// The named arguments, in order.
    let parameters: [LuaParameter]
    /// The local holding the index of the first argument after the named ones; nil: none.
    let rest: String?

    /// A script named `name` whose source is the generated prologue, then `library` (helpers
    /// that may use the parameters), then `body`.
    init(_ name: String, parameters: [LuaParameter], rest: String? = nil, library: String = "", body: String) {
        self.parameters = parameters
        self.rest = rest
        store = StoreScript(name: name, source: Self.prologue(parameters, rest: rest) + library + body,
                            keyCount: parameters.count { $0.kind == .key })
        redis = RedisScript(store.source)
    }

    /// The Lua source: the prologue, the library and the body.
    package var source: String { store.source }
    /// The script for a link that runs it itself (``RedisScript/run(on:keys:arguments:completion:)``).
    let redis: RedisScript

    /// Runs the script on `connection` with `arguments` as ``arguments(_:rest:)`` made them (its
    /// keys first), for a link that runs it itself rather than through the core.
    func run(on connection: RedisConnection, arguments: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        redis.run(on: connection, declaringKeys: store.keyCount, of: arguments, completion: completion)
    }

    /// The script with its arguments, as the core asks Redis to run it.
    func command(_ named: KeyValuePairs<String, any LuaArgument>..., rest: [[UInt8]] = []) -> StoreCommand {
        .script(store, arguments: arguments(named, rest: rest))
    }

    /// The arguments as Redis takes them: the keys (in the order the parameters name them),
    /// then the other named arguments in their order, then `rest`.
    package func arguments(_ named: KeyValuePairs<String, any LuaArgument>..., rest: [[UInt8]] = []) -> [[UInt8]] {
        arguments(named, rest: rest)
    }

    private func arguments(_ groups: [KeyValuePairs<String, any LuaArgument>], rest extra: [[UInt8]]) -> [[UInt8]] {
        var keys: [[UInt8]] = [], values: [[UInt8]] = []
        keys.reserveCapacity(store.keyCount)
        values.reserveCapacity(parameters.count - store.keyCount + extra.count)
        var index = 0
        for group in groups {
            for (name, value) in group {
                assert(index < parameters.count && parameters[index].name == name,
                       "\(store.name): argument \(index + 1) is passed as \"\(name)\", but the script names it \"\(index < parameters.count ? parameters[index].name : "nothing")\"")
                if parameters[index].kind == .key { keys.append(value.luaBytes) } else { values.append(value.luaBytes) }
                index += 1
            }
        }
        assert(index == parameters.count, "\(store.name): \(index) of its \(parameters.count) named arguments passed")
        assert(rest != nil || extra.isEmpty, "\(store.name) takes no arguments past its named ones")
        return keys + values + extra
    }

    /// `local <name> = KEYS[<k>]` or `ARGV[<i>]` for each parameter, then
    /// `local <rest> = <next ARGV index>`.
    static func prologue(_ parameters: [LuaParameter], rest: String?) -> String {
        var keys = 0, values = 0
        var lines = parameters.map { parameter in
            switch parameter.kind {
            case .key:
                keys += 1
                return "local \(parameter.name) = KEYS[\(keys)]"
            case .text:
                values += 1
                return "local \(parameter.name) = ARGV[\(values)]"
            case .number:
                values += 1
                return "local \(parameter.name) = tonumber(ARGV[\(values)])"
            }
        }
        if let rest { lines.append("local \(rest) = \(values + 1)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `lessBytes(a, b)`: whether `a` sorts before `b` in byte order, the order of
    /// `ZRANGEBYLEX`, for the scripts that page by name.
    static let lessBytes = """
        local function lessBytes(a, b)
          local n = math.min(#a, #b)
          for i = 1, n do
            local x, y = string.byte(a, i), string.byte(b, i)
            if x ~= y then return x < y end
          end
          return #a < #b
        end

        """
}

extension RedisScript {
    /// Runs the script with `arguments` laid out as a ``LuaScript`` call lays them out: the
    /// first `keyCount` are its keys (`KEYS`), the rest its `ARGV`.
    func run(on connection: RedisConnection, declaringKeys keyCount: Int, of arguments: [[UInt8]],
             completion: @escaping RedisConnection.Completion) {
        run(on: connection, keys: Array(arguments.prefix(keyCount)), arguments: Array(arguments.dropFirst(keyCount)),
            completion: completion)
    }
}
