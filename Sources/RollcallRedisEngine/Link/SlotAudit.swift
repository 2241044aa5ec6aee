/// Tests only: which scripts would a Redis Cluster refuse for touching keys of two slots? A
/// Lua prelude put before a script's source shadows `redis` with a table whose `call` and
/// `pcall` wrap Redis' own (the global one is read-only): each key a
/// command names (`KEYS[1]` first, when the script declares keys) is hashed to its slot as
/// Redis Cluster does (CRC16 of the key or of its `{tag}`, modulo 16384), and at the first key
/// of another slot the script's name goes into ``markKey(scriptName:)`` (`SET`, outside the
/// wrapper). Nothing else changes: the script runs to its end, on any Redis (docs/cluster.md,
/// "Where the build stands").
package enum SlotAudit {
    /// The key a script touching keys of two slots is marked by.
    package static func markKey(scriptName: String) -> String { "rollcall-slot-audit:" + scriptName }

    /// The Lua that wraps `redis.call` and `redis.pcall` for the script named `scriptName`.
    static func prelude(scriptName: String) -> String {
        """
        local __call, __pcall, __slot, __marked = redis.call, redis.pcall, nil, false
        local function __slotOf(key)
          local open = string.find(key, '{', 1, true)
          if open then
            local close = string.find(key, '}', open + 1, true)
            if close and close > open + 1 then key = string.sub(key, open + 1, close - 1) end
          end
          local crc = 0
          for i = 1, #key do
            crc = bit.bxor(crc, bit.lshift(string.byte(key, i), 8))
            for _ = 1, 8 do
              if bit.band(crc, 0x8000) ~= 0 then crc = bit.bxor(bit.lshift(crc, 1), 0x1021) else crc = bit.lshift(crc, 1) end
              crc = bit.band(crc, 0xffff)
            end
          end
          return crc % 16384
        end
        local function __keysOf(command, args)
          command = string.upper(command)
          if command == 'TIME' or command == 'PUBLISH' or command == 'SCAN' then return {} end
          if command == 'DEL' or command == 'EXISTS' then return args end
          if command == 'RENAME' then return {args[1], args[2]} end
          if command == 'XGROUP' or command == 'XINFO' then return {args[2]} end
          if command == 'XREADGROUP' then
            for i, word in ipairs(args) do
              if string.upper(word) == 'STREAMS' then
                local keys, count = {}, (#args - i) / 2
                for k = 1, count do keys[k] = args[i + k] end
                return keys
              end
            end
            return {}
          end
          return {args[1]}
        end
        local function __check(command, ...)
          for _, key in ipairs(__keysOf(command, {...})) do
            local slot = __slotOf(tostring(key))
            if __slot == nil then __slot = slot elseif slot ~= __slot and not __marked then
              __marked = true
              __call('SET', '\(markKey(scriptName: scriptName))', tostring(key))
            end
          end
        end
        if KEYS[1] then __slot = __slotOf(KEYS[1]) end
        local redis = setmetatable({
          call = function(command, ...) __check(command, ...) return __call(command, ...) end,
          pcall = function(command, ...) __check(command, ...) return __pcall(command, ...) end,
        }, {__index = redis})

        """
    }
}
