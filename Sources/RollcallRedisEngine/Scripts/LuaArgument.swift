/// A value a Lua script takes as one argument (``LuaScript/command(_:rest:)``): its bytes
/// as Redis receives them.
package protocol LuaArgument {
    /// The argument's bytes.
    var luaBytes: [UInt8] { get }
}

extension String: LuaArgument {
    package var luaBytes: [UInt8] { Array(utf8) }
}

extension Array: LuaArgument where Element == UInt8 {
    package var luaBytes: [UInt8] { self }
}

extension Int: LuaArgument {
    package var luaBytes: [UInt8] { Array(String(self).utf8) }
}

extension Int64: LuaArgument {
    package var luaBytes: [UInt8] { Array(String(self).utf8) }
}

/// A yes/no argument: `1` or `0`.
extension Bool: LuaArgument {
    package var luaBytes: [UInt8] { self ? [UInt8(ascii: "1")] : [UInt8(ascii: "0")] }
}
