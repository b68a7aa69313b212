import CLua
import Foundation
import ShareFlow

/// Reading arguments (lists, enums, objects a plugin may change) and pushing lists.
extension Bindings {
    /// In a plugin, an engine call that changes its argument (a share adopting a participant or
    /// a root record, a save stamping a record) takes only objects the plugin made.
    func requireWritable(_ call: LuaCall, _ i: Int32, _ typeName: String) throws {
        guard call.state.isWritable(at: i) else {
            throw call.argumentError(i, "\(typeName) is read-only in a plugin: it belongs to the caller")
        }
    }

    func pushList<T>(_ items: [T], _ push: (T) -> Void) {
        lua_createtable(lua.L, Int32(items.count), 0)
        for (n, item) in items.enumerated() {
            push(item)
            lua_rawseti(lua.L, -2, lua_Integer(n + 1))
        }
    }

    /// The sequence in the table at `i`, each element read by `read` while it is on top of
    /// the stack (at -1); `read` gets the element's index from 0.
    func list<T>(_ call: LuaCall, _ i: Int32, _ read: (Int) throws -> T) throws -> [T] {
        try call.table(i)
        let abs = lua_absindex(call.L, i)
        return try (0..<call.listLength(abs)).map { n in
            try call.element(abs, n + 1)
            defer { call.state.pop() }
            return try read(n)
        }
    }

    func stringList(_ call: LuaCall, _ i: Int32) throws -> [String] {
        let abs = lua_absindex(call.L, i)
        return try list(call, abs) { n in
            guard let s = call.state.string(at: -1) else {
                throw call.argumentError(abs, "item \(n + 1) must be a string, got \(call.typeName(-1))")
            }
            return s
        }
    }

    func metadataList(_ call: LuaCall, _ i: Int32) throws -> [ShareMetadata] {
        try list(call, i) { n in
            guard let m = call.state.object(at: -1, typeName: metadataClass.typeName, as: ShareMetadata.self) else {
                throw call.argumentError(i, "item \(n + 1): ShareMetadata expected, got \(call.typeName(-1))")
            }
            return m
        }
    }
}

/// An enum from its string; an unknown string is an error naming the value and the choices.
/// As `luaL_checkoption`: an argument's error names its position; a table field's (at a
/// negative index) the caller's `file:line:`.
func enumValue<E: RawRepresentable & CaseIterable>(_ call: LuaCall, _ i: Int32, _ type: E.Type, name: String) throws -> E where E.RawValue == String {
    let reason = { (got: String) in "invalid \(name) \(got); expected one of: \(E.allCases.map(\.rawValue).joined(separator: ", "))" }
    guard lua_type(call.L, i) == LUA_TSTRING, let s = call.state.string(at: i) else {
        if i > 0 { throw call.argumentError(i, "string expected, got \(call.typeName(i))") }
        throw LuaRaise.message(call.position + reason("(a \(call.typeName(i)))"))
    }
    guard let v = E(rawValue: s) else {
        if i > 0 { throw call.argumentError(i, reason("'\(s)'")) }
        throw LuaRaise.message(call.position + reason("'\(s)'"))
    }
    return v
}
