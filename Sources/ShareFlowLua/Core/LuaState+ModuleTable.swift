import CLua

/// A function of a module table: its key and its body (as `LuaState.push(function:)` takes it).
typealias ModuleFunction = (name: String, function: (LuaCall) throws -> Int32)

extension LuaState {
    /// Sets each of `functions` in the table on top of the stack under its name; error
    /// messages name it `prefix + name` (`accounts.create`).
    func setFunctions(_ functions: [ModuleFunction], prefix: String = "") {
        for (name, function) in functions {
            push(function: prefix + name, function)
            lua_setfield(L, -2, name)
        }
    }

    /// A new table of `functions`, set as `key` in the table on top of the stack; error
    /// messages name its functions `key.name` unless `prefix` says otherwise.
    func setModuleTable(_ key: String, _ functions: [ModuleFunction], prefix: String? = nil) {
        lua_createtable(L, 0, Int32(functions.count))
        setFunctions(functions, prefix: prefix ?? key + ".")
        lua_setfield(L, -2, key)
    }
}
