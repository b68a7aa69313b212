import CLua
import Foundation
import ShareFlow

/// The `shareflow` table: the directory, sessions, constructors, operations, hooks and log.
/// Each module table is a list of `ModuleFunction`s in its own `ShareFlowModule+Table.swift`
/// (the hooks: `Hooks.swift`), set by one loop (`LuaState.setFunctions`).
package enum ShareFlowModule {
    package static let version = "0.1.0"

    // The operations' constructors come from the one list in `Bindings.defineOperations`.

    /// Fills the table on top of the stack.
    static func install(into lua: LuaState, host: ScriptHost, bindings b: Bindings) throws {
        let L = lua.L
        lua.push(string: version)
        lua_setfield(L, -2, "version")
        // The linked Lua library's release ("Lua 5.4.4"), as lua_ident says it: what the
        // sandbox's list of known bugs is about (docs/reference/lua-bugs.md).
        lua.push(string: LuaState.linkedRelease)
        lua_setfield(L, -2, "luaRelease")
        lua.push(strings: Event.names)
        lua_setfield(L, -2, "events")
        lua.setModuleTable("log", logFunctions(host))
        lua.setModuleTable("accounts", accountFunctions(b))
        lua.setFunctions(sessionFunctions(host, b))
        lua.setFunctions(constructors(host, b))
        Hooks.install(lua, host: host, bindings: b)
        lua.setModuleTable("admin", adminFunctions(lua, b))
        lua.setModuleTable("json", jsonFunctions)
        lua.setModuleTable("faults", faultFunctions(lua, host: host, b))
        // Plugins: present where the process manages some (trusted scripts and the console).
        lua.setModuleTable("plugins", pluginFunctions(host))

        lua.setModuleTable(
            "_newOperation",
            b.operationNames.map { name in
                (
                    name,
                    { [unowned b] _ in
                        b.newOperation(name: name)
                        return 1
                    }
                )
            },
            prefix: ""
        )
        // Constructors that take a table of fields set them through the objects' own
        // __newindex, so a bad field is the same clear error as `op.bad = 1`.
        lua_pushvalue(L, -1)
        try lua.load(prelude, chunkName: "=[shareflow prelude]")
        clua_insert(L, -2)
        try lua.call(arguments: 1, results: 0)
    }

    /// `Lua/shareflow_prelude.lua`, embedded at build time (the EmbedLua plugin).
    static var prelude: String { EmbeddedLua.shareflowPrelude }

    /// `tostring` without running Lua metamethods other than under pcall.
    static func describe(_ lua: LuaState, at i: Int32) -> String {
        let L = lua.L
        switch lua_type(L, i) {
        case LUA_TSTRING: return lua.string(at: i) ?? ""
        case LUA_TNUMBER, LUA_TBOOLEAN, LUA_TNIL:
            return (try? lua.value(at: i).description) ?? "?"
        default:
            // The metamethod runs under lua_pcall: it must not longjmp through this frame.
            if luaL_getmetafield(L, i, "__tostring") != LUA_TNIL {
                lua_pushvalue(L, i)
                if (try? lua.call(arguments: 1, results: 1)) != nil {
                    defer { lua.pop() }
                    if let s = lua.string(at: -1) { return s }
                }
            }
            return String(cString: clua_typename_at(L, i))
        }
    }
}
