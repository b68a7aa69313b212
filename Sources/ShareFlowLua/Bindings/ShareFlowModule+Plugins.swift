import CLua
import Foundation
import ShareFlow

/// `sf.plugins`: list, load, unload and reload plugins (trusted scripts and the console only;
/// elsewhere `list` is empty and the others raise).
extension ShareFlowModule {
    static func pluginFunctions(_ host: ScriptHost) -> [ModuleFunction] {
        [
            (
                "list",
                { [unowned host] call in
                    guard let plugins = host.plugins else {
                        lua_createtable(call.L, 0, 0)
                        return 1
                    }
                    let infos = plugins.info()
                    lua_createtable(call.L, Int32(infos.count), 0)
                    for (n, info) in infos.enumerated() {
                        lua_createtable(call.L, 0, 6)
                        call.state.push(string: info.name)
                        lua_setfield(call.L, -2, "name")
                        try call.state.push(info.version.map { .string($0) } ?? .nil)
                        lua_setfield(call.L, -2, "version")
                        try call.state.push(info.description.map { .string($0) } ?? .nil)
                        lua_setfield(call.L, -2, "description")
                        call.state.push(string: info.folder)
                        lua_setfield(call.L, -2, "folder")
                        lua_pushboolean(call.L, info.enabled ? 1 : 0)
                        lua_setfield(call.L, -2, "enabled")
                        lua_pushboolean(call.L, info.loaded ? 1 : 0)
                        lua_setfield(call.L, -2, "loaded")
                        lua_rawseti(call.L, -2, lua_Integer(n + 1))
                    }
                    return 1
                }
            ),
            (
                "load",
                { [unowned host] call in
                    let plugins = try managed(host)
                    let name = try call.string(1)
                    var settings: LuaTable?
                    if !call.isNil(2) {
                        try call.table(2)
                        guard case .table(let t) = try call.value(2) else { return 0 }
                        settings = t
                    }
                    do { try plugins.load(name, settings: settings) } catch let e as PluginError { throw LuaRaise.message(e.description) }
                    return 0
                }
            ),
            (
                "unload",
                { [unowned host] call in
                    try managed(host).unload(try call.string(1))
                    return 0
                }
            ),
            (
                "reload",
                { [unowned host] call in
                    let plugins = try managed(host)
                    let names: [String]
                    do { names = try plugins.reload(try call.optionalString(1)) } catch let e as PluginError { throw LuaRaise.message(e.description) }
                    call.state.push(strings: names)
                    return 1
                }
            ),
            (
                "loaded",
                { [unowned host] call in
                    call.state.push(strings: (host.plugins?.loadedNames ?? []))
                    return 1
                }
            ),
            (
                "dataFolder",
                { [unowned host] call in
                    let plugins = try managed(host)
                    call.state.push(string: (plugins.dataDirectory as NSString).appendingPathComponent(try call.string(1)))
                    return 1
                }
            ),
        ]
    }

    private static func managed(_ host: ScriptHost) throws -> PluginManager {
        guard let p = host.plugins else { throw LuaRaise.message("plugins are managed only by trusted scripts and the console") }
        return p
    }
}
