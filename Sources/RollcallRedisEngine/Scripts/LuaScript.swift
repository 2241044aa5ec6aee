import RollcallCore
import RollcallRedis

/// One argument a Lua script takes, by name: the script's prologue reads it into a `local`
/// of that name, as text or as a number.
package struct LuaParameter: Equatable {
    /// How the prologue reads the argument.
    enum Kind: Equatable {
        /// `local name = ARGV[i]`.
        case text
        /// `local name = tonumber(ARGV[i])`.
        case number
    }

    /// The Lua local's name, and the name a call passes the argument by.
    let name: String
    /// How it is read.
    let kind: Kind

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
/// sections) are the *rest*: the prologue sets `local <rest> = <index of the first one>`.
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
        store = StoreScript(name: name, source: Self.prologue(parameters, rest: rest) + library + body)
        redis = RedisScript(store.source)
    }

    /// The Lua source: the prologue, the library and the body.
    package var source: String { store.source }
    /// The script for a link that runs it itself (``RedisScript/run(on:keys:arguments:completion:)``).
    let redis: RedisScript

    /// The script with its arguments, as the core asks Redis to run it.
    func command(_ named: KeyValuePairs<String, any LuaArgument>..., rest: [[UInt8]] = []) -> StoreCommand {
        .script(store, arguments: arguments(named, rest: rest))
    }

    /// The arguments, in the script's order: each named group in turn, then `rest`.
    package func arguments(_ named: KeyValuePairs<String, any LuaArgument>..., rest: [[UInt8]] = []) -> [[UInt8]] {
        arguments(named, rest: rest)
    }

    private func arguments(_ groups: [KeyValuePairs<String, any LuaArgument>], rest extra: [[UInt8]]) -> [[UInt8]] {
        var values: [[UInt8]] = []
        values.reserveCapacity(parameters.count + extra.count)
        for group in groups {
            for (name, value) in group {
                assert(values.count < parameters.count && parameters[values.count].name == name,
                       "\(store.name): argument \(values.count + 1) is passed as \"\(name)\", but the script names it \"\(values.count < parameters.count ? parameters[values.count].name : "nothing")\"")
                values.append(value.luaBytes)
            }
        }
        assert(values.count == parameters.count, "\(store.name): \(values.count) of its \(parameters.count) named arguments passed")
        assert(rest != nil || extra.isEmpty, "\(store.name) takes no arguments past its named ones")
        values += extra
        return values
    }

    /// `local <name> = ARGV[<i>]` for each parameter, then `local <rest> = <next index>`.
    static func prologue(_ parameters: [LuaParameter], rest: String?) -> String {
        var lines = parameters.enumerated().map { index, parameter in
            switch parameter.kind {
            case .text: "local \(parameter.name) = ARGV[\(index + 1)]"
            case .number: "local \(parameter.name) = tonumber(ARGV[\(index + 1)])"
            }
        }
        if let rest { lines.append("local \(rest) = \(parameters.count + 1)") }
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
