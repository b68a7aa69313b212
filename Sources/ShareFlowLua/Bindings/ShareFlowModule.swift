import CLua
import Logging
import ShareFlow

/// The `shareflow` table: every binding adds its part here.
enum ShareFlowModule {
    static let version = "0.1.0"

    /// Fills the table on top of the stack.
    static func install(into lua: LuaState, host: ScriptHost) {
        let L = lua.L
        lua.push(string: version)
        lua_setfield(L, -2, "version")
        installLog(into: lua, host: host)
    }

    static func installLog(into lua: LuaState, host: ScriptHost) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        let levels: [(String, Logger.Level)] = [("debug", .debug), ("info", .info), ("warn", .warning), ("error", .error)]
        for (name, level) in levels {
            lua.push(function: "log.\(name)") { [weak host] call in
                var parts: [String] = []
                for i in 1...max(call.count, 1) where call.count > 0 {
                    parts.append(describe(call.state, at: i))
                }
                host?.logger.log(level: level, "\(parts.joined(separator: " "))")
                return 0
            }
            lua_setfield(L, -2, name)
        }
        lua_setfield(L, -2, "log")
    }

    /// `tostring` without running Lua metamethods other than our own userdata's.
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
