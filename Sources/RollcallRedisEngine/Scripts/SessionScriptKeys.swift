/// Lua for the scripts of users and sessions: the keys of a user and of its sessions sit under
/// the user's key group's tag `P{<g>}` (``KeyGroups``; docs/cluster.md, "Keys").
enum SessionScriptKeys {
    /// `userTag(user)`: `P{<g>}` of `user`, `g` computed as ``KeyGroups/group(of:)`` does for
    /// `u:<n>:<user>` (FNV-1a, 32 bits, modulo the group count); `tagOfRecord(record, id)`:
    /// the tag of the session record key `record` (`P{<g>}s:<id>`) a node passed;
    /// `entryOf(tag, id)` / `fromEntry(entry)`: how `P tok:<hash>` and `P ns:<node>` name a
    /// session, `<g>/<id>` — the group and id, the least that finds its keys, as the id alone
    /// cannot (ids are minted before the user is known). Needs the locals `prefix` and, for
    /// `userTag`, `groups` (the group count).
    static let library = ClusterKeys.luaControlTag + """
        local function userTag(user)
          if groups <= 1 then return prefix .. '{0}' end
          local id = 'u:' .. #user .. ':' .. user
          local h = 2166136261
          for i = 1, #id do
            local low = h % 256
            h = h - low + bit.bxor(low, string.byte(id, i))
            -- h * 16777619 (= 2^24 + 403) modulo 2^32, exact in doubles.
            h = (h * 403 + (h % 256) * 16777216) % 4294967296
          end
          return prefix .. '{' .. string.format('%d', h % groups) .. '}'
        end
        local function tagOfRecord(record, id) return string.sub(record, 1, #record - #id - 2) end
        local function entryOf(tag, id) return string.sub(tag, #prefix + 2, -2) .. '/' .. id end
        local function fromEntry(entry)
          local slash = string.find(entry, '/', 1, true)
          return prefix .. '{' .. string.sub(entry, 1, slash - 1) .. '}', string.sub(entry, slash + 1)
        end

        """
}
