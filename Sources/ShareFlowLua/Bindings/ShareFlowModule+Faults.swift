import CLua
import Foundation
import ShareFlow

/// `sf.faults` (SPEC §15): arming fault rules from Lua, so a script or a plugin makes the
/// engine fail as CloudKit does.
///
/// ```lua
/// local rule = sf.faults.add{ operation = "modifyRecords", fault = "requestRateLimited", count = 1 }
/// local ok, err = db:modifyRecords{ save = { note } }   -- err.code == "requestRateLimited"
/// rule:remove()
/// ```
extension ShareFlowModule {
    /// A rule armed from Lua: `:remove()` disarms it (true if it was still armed).
    final class FaultRuleHandle {
        let id: Int
        let injector: FaultInjector
        let armed: ArmedHere
        init(id: Int, injector: FaultInjector, armed: ArmedHere) {
            self.id = id
            self.injector = injector
            self.armed = armed
        }
    }

    /// The rules this state armed and has not removed: disarmed when it closes (one
    /// registration for them all, so arming and removing in a loop holds nothing).
    final class ArmedHere {
        var ids = Set<Int>()
    }

    static func faultFunctions(_ lua: LuaState, host: ScriptHost, _ b: Bindings) -> [ModuleFunction] {
        let handles = LuaClass<FaultRuleHandle>("FaultRule")
        handles
            .property("id") { lua, h in lua_pushinteger(lua.L, lua_Integer(h.id)) }
            .method("remove") { call, h in
                h.armed.ids.remove(h.id)
                lua_pushboolean(call.L, h.injector.remove(id: h.id) ? 1 : 0)
                return 1
            }
            .describe { "FaultRule(\($0.id))" }
        // Its metatable is made by the first push (`LuaClass.register`): most states arm no rule.
        let injector = b.engine.faults
        // A plugin's rules are its own: they end when it unloads (PluginManager.unload), and
        // every rule armed here ends when this state does.
        let owner: FaultInjector.Owner = host.labelPrefix.isEmpty ? .runtime : .plugin(String(host.labelPrefix.dropLast()))
        let armedHere = ArmedHere()
        host.registrations.append { for id in armedHere.ids { injector.remove(id: id) } }
        return [
            (
                "add",
                { call in
                    let rule = try b.raising { try FaultRule(try faultFields(call, 1), name: "sf.faults.add") }
                    let id = try b.raising { try injector.add(rule, owner: owner) }
                    armedHere.ids.insert(id)
                    handles.push(FaultRuleHandle(id: id, injector: injector, armed: armedHere), in: call.state)
                    return 1
                }
            ),
            (
                "clear",
                { call in
                    // A plugin clears its own rules only: the operator's (admin, scripts) and other
                    // plugins' are not its to take.
                    let removed: Int
                    if case .plugin = owner { removed = injector.removeAll { $0 == owner } } else { removed = injector.clear() }
                    lua_pushinteger(call.L, lua_Integer(removed))
                    return 1
                }
            ),
            (
                "list",
                { call in
                    let rules = injector.list()
                    try call.state.checkStack(4)
                    b.pushList(rules) { armed in
                        lua_createtable(call.L, 0, 20)
                        lua_pushinteger(call.L, lua_Integer(armed.id))
                        lua_setfield(call.L, -2, "id")
                        switch armed.owner {
                        case .config: lua.push(string: "config")
                        case .runtime: lua.push(string: "runtime")
                        case .plugin(let name):
                            lua.push(string: name)
                            lua_setfield(call.L, -2, "plugin")
                            lua.push(string: "plugin")
                        }
                        lua_setfield(call.L, -2, "owner")
                        for (key, value) in armed.rule.fields {
                            push(value, lua)
                            lua_setfield(call.L, -2, key)
                        }
                    }
                    return 1
                }
            ),
            (
                "history",
                { call in
                    let history = injector.history()
                    try call.state.checkStack(4)
                    b.pushList(history) { pushInjection($0, lua) }
                    return 1
                }
            ),
        ]
    }

    /// One injection as history gives it: `{ time, rule, fault, operation, caller, zone,
    /// recordName }`.
    static func pushInjection(_ i: FaultInjection, _ lua: LuaState) {
        lua_createtable(lua.L, 0, 7)
        lua_pushnumber(lua.L, i.time)
        lua_setfield(lua.L, -2, "time")
        setInjectionFields(i, lua)
    }

    /// The injection's fields but its time, on the table on top: history's entries and the
    /// `fault.injected` event (whose time is the event's) read the same.
    static func setInjectionFields(_ i: FaultInjection, _ lua: LuaState) {
        let L = lua.L
        lua_pushinteger(L, lua_Integer(i.rule))
        lua_setfield(L, -2, "rule")
        lua.push(string: i.fault?.rawValue ?? "latency")
        lua_setfield(L, -2, "fault")
        lua.push(string: i.operation)
        lua_setfield(L, -2, "operation")
        lua.setField("caller", string: i.caller)
        lua.setField("zone", string: i.zone)
        lua.setField("recordName", string: i.recordName)
    }

    static func push(_ value: FaultRule.Value, _ lua: LuaState) {
        switch value {
        case .string(let s): lua.push(string: s)
        case .number(let n):
            if n == n.rounded(), abs(n) < 9.007e15 { lua_pushinteger(lua.L, lua_Integer(n)) } else { lua_pushnumber(lua.L, n) }
        case .boolean(let b): lua_pushboolean(lua.L, b ? 1 : 0)
        case .other: lua_pushnil(lua.L)
        }
    }

    /// The rule table at `i` as fields, read raw (no metamethod runs): a rule is flat, so a
    /// nested table is named by its type and refused by the rule's checks, never walked.
    static func faultFields(_ call: LuaCall, _ i: Int32) throws -> [String: FaultRule.Value] {
        try call.table(i)
        let L = call.L
        let index = lua_absindex(L, i)
        try call.state.checkStack(3)
        var fields: [String: FaultRule.Value] = [:]
        lua_pushnil(L)
        while lua_next(L, index) != 0 {
            try call.state.budgetStep()
            guard lua_type(L, -2) == LUA_TSTRING, let key = call.state.string(at: -2) else {
                throw call.argumentError(
                    i,
                    "a rule's fields are named; got a \(call.typeName(-2)) key (expected \(FaultRule.keys.joined(separator: ", ")))"
                )
            }
            guard fields.count <= FaultRule.keys.count else {
                throw call.argumentError(i, "a rule has at most \(FaultRule.keys.count) fields")
            }
            switch lua_type(L, -1) {
            case LUA_TSTRING: fields[key] = .string(call.state.string(at: -1) ?? "")
            case LUA_TNUMBER: fields[key] = .number(clua_tonumber(L, -1))
            case LUA_TBOOLEAN: fields[key] = .boolean(lua_toboolean(L, -1) != 0)
            default: fields[key] = .other(type: call.typeName(-1))
            }
            call.state.pop()
        }
        return fields
    }
}
