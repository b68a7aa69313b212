import CLua
import CShareFlowSupport
import Foundation
import ShareFlow

/// What an observer or policy closure needs to call its Lua function, as plain values and an
/// unretained reference: the engine calls it on every event.
struct HookCall {
    let L: OpaquePointer
    let limits: UnsafeMutablePointer<sf_limits>
    let ref: Int32
    let bindings: Unmanaged<Bindings>
    /// Keeps the function pinned in the registry while the registration lives.
    let function: LuaReference

    init(_ b: Bindings, _ function: LuaReference) {
        L = b.lua.L
        limits = b.lua.limits
        ref = function.ref
        bindings = .passUnretained(b)
        self.function = function
    }

    /// Calls the function with the one argument `push` leaves, under the state's CPU budget,
    /// and returns what `read` makes of its results (given the stack top before the call).
    func call<T>(results: Int32, push: (Bindings) -> Void, read: (Int32) -> T) throws -> T {
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        lua_rawgeti(L, clua_registryindex(), lua_Integer(ref))
        bindings._withUnsafeGuaranteedRef(push)
        try LuaState.guardedCall(L, limits, arguments: 1, results: results)
        return read(base)
    }
}

/// `sf.on`, `sf.policy`, `sf.allow`, `sf.deny`, `sf.decisions` (SPEC §6): Lua functions as
/// the engine's observers and policies.
enum Hooks {
    /// A registration Lua can remove.
    final class Handle {
        let remove: () -> Void
        var removed = false
        let label: String
        init(label: String, remove: @escaping () -> Void) { self.label = label; self.remove = remove }
    }

    static func install(_ lua: LuaState, host: ScriptHost, bindings b: Bindings) {
        let L = lua.L
        let requests = b.requests
        let handleClass = LuaClass<Handle>("HookHandle")
        handleClass
            .property("name") { lua, h in lua.push(string: h.label) }
            .method("remove") { _, h in
                if !h.removed { h.remove(); h.removed = true }
                return 0
            }
            .describe { "Hook(\($0.label)\($0.removed ? ", removed" : ""))" }
        handleClass.register(in: lua)

        lua.push(function: "on") { [unowned host, unowned b] call in
            let eventName = try call.string(1)
            let fn = try call.function(2)
            let (priority, name) = try options(call, 3, default: "observer")
            guard let event = EventKind(name: eventName) else {
                throw call.argumentError(1, "unknown event '\(eventName)' (expected one of: \(Event.names.joined(separator: ", ")))")
            }
            let label = host.labelPrefix + name
            // The closure holds plain values and an unretained reference, so an event costs no
            // reference counting here. Safe because the host removes its registrations before
            // it goes (ScriptHost.deinit).
            let hook = HookCall(b, fn)
            let handle = b.engine.events.observe(event, priority: priority, label: label) { ev in
                try hook.call(results: 0, push: { pushEvent(ev, $0) }, read: { _ in })
            }
            host.registrations.append { handle.remove() }
            handleClass.push(Handle(label: name) { handle.remove() }, in: call.state)
            return 1
        }
        lua_setfield(L, -2, "on")

        lua.push(function: "policy") { [unowned host, unowned b] call in
            let pointName = try call.string(1)
            let fn = try call.function(2)
            let (priority, name) = try options(call, 3, default: "policy")
            guard let point = DecisionPoint(name: pointName) else {
                throw call.argumentError(1, "unknown decision point '\(pointName)' (expected one of: \(PolicySet.points.joined(separator: ", ")))")
            }
            let label = host.labelPrefix + name
            // As for observers: no reference counting per decision; the host removes its
            // policies before it goes.
            let hook = HookCall(b, fn)
            let id = b.engine.policies.add(point, name: label, priority: priority) { request in
                try hook.call(results: 2, push: { _ in requests.push(request) }, read: { verdict(hook.L, base: $0) })
            }
            let policies = b.engine.policies
            host.registrations.append { policies.remove(id: id) }
            handleClass.push(Handle(label: name) { policies.remove(id: id) }, in: call.state)
            return 1
        }
        lua_setfield(L, -2, "policy")

        lua.push(function: "allow") { call in
            lua_createtable(call.L, 0, 1)
            lua_pushboolean(call.L, 1)
            lua_setfield(call.L, -2, "allow")
            return 1
        }
        lua_setfield(L, -2, "allow")

        lua.push(function: "deny") { call in
            let reason = try call.optionalString(1) ?? "denied"
            lua_createtable(call.L, 0, 2)
            lua_pushboolean(call.L, 0)
            lua_setfield(call.L, -2, "allow")
            call.state.push(string: reason)
            lua_setfield(call.L, -2, "reason")
            return 1
        }
        lua_setfield(L, -2, "deny")

        lua.push(function: "decisions") { [unowned b] call in
            var limit = 20
            if !call.isNil(1) {
                try call.table(1)
                try call.checkKeys(1, allowed: ["limit"])
                limit = Int(try call.numberField(1, "limit") ?? 20)
            }
            let decisions = b.engine.policies.decisions(limit: limit)
            b.pushList(decisions) { d in
                let L = b.lua.L
                lua_createtable(L, 0, 6)
                lua_pushinteger(L, lua_Integer(d.id)); lua_setfield(L, -2, "id")
                b.lua.push(string: d.point); lua_setfield(L, -2, "point")
                b.lua.push(strings: d.policies); lua_setfield(L, -2, "policies")
                lua_pushboolean(L, d.allow ? 1 : 0); lua_setfield(L, -2, "allow")
                b.lua.push(strings: d.reasons); lua_setfield(L, -2, "reasons")
                lua_pushnumber(L, d.duration); lua_setfield(L, -2, "duration")
                lua_pushnumber(L, d.time.timeIntervalSince1970); lua_setfield(L, -2, "time")
            }
            return 1
        }
        lua_setfield(L, -2, "decisions")
    }

    /// `{ priority = 0, name = "…" }`
    private static func options(_ call: LuaCall, _ i: Int32, default name: String) throws -> (Int, String) {
        guard !call.isNil(i) else { return (0, name) }
        try call.table(i)
        try call.checkKeys(i, allowed: ["priority", "name"])
        return (Int(try call.numberField(i, "priority") ?? 0), try call.stringField(i, "name") ?? name)
    }

    /// What a policy returned: nothing or `sf.allow()` or `true` allows; `sf.deny(reason)` or
    /// `false, reason` denies.
    private static func verdict(_ L: OpaquePointer, base: Int32) -> PolicyVerdict {
        let first = base + 1
        switch lua_type(L, first) {
        case LUA_TNIL, LUA_TNONE: return .allow
        case LUA_TBOOLEAN:
            if lua_toboolean(L, first) != 0 { return .allow }
            return .deny(LuaState.owner(of: L).string(at: first + 1) ?? "denied")
        case LUA_TTABLE:
            lua_getfield(L, first, "allow")
            defer { clua_pop(L, 1) }
            if lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1) == 0 {
                lua_getfield(L, first, "reason")
                defer { clua_pop(L, 1) }
                return .deny(LuaState.owner(of: L).string(at: -1) ?? "denied")
            }
            return .allow
        default:
            return .deny("policy returned a \(String(cString: clua_typename_at(L, first))), expected nothing, sf.allow() or sf.deny(reason)")
        }
    }

    static func pushEvent(_ ev: Event, _ b: Bindings) {
        let L = b.lua.L
        lua_createtable(L, 0, 8)
        b.lua.push(static: ev.kind.staticName); lua_setfield(L, -2, "name")
        b.setCallerAndContainer(ev.caller, ev.container)
        lua_pushnumber(L, ev.time.timeIntervalSince1970); lua_setfield(L, -2, "time")
        // Objects leave the event unmanaged: the event keeps them alive, and passing them on
        // as references would retain and release each one around the call.
        if let s = ev.share.map(Unmanaged.passUnretained) { b.shareClass.push(unretained: s, in: b.lua); lua_setfield(L, -2, "share") }
        if let p = ev.participant.map(Unmanaged.passUnretained) { b.participantClass.push(unretained: p, in: b.lua); lua_setfield(L, -2, "participant") }
        if let l = ev.lookupInfo { b.push(l); lua_setfield(L, -2, "lookupInfo") }
        if let m = ev.metadata.map(Unmanaged.passUnretained) { b.metadataClass.push(unretained: m, in: b.lua); lua_setfield(L, -2, "metadata") }
        if let i = ev.identity { b.push(i); lua_setfield(L, -2, "identity") }
        if let v = ev.url { b.lua.push(string: v); lua_setfield(L, -2, "url") }
        if let v = ev.reason { b.lua.push(string: v); lua_setfield(L, -2, "reason") }
        if let v = ev.from { b.lua.push(string: v); lua_setfield(L, -2, "from") }
        if let v = ev.to { b.lua.push(string: v); lua_setfield(L, -2, "to") }
        if let v = ev.operation { b.lua.push(string: v); lua_setfield(L, -2, "operation") }
        if let c = ev.created { lua_pushboolean(L, c ? 1 : 0); lua_setfield(L, -2, "created") }
        if let n = ev.items { lua_pushinteger(L, lua_Integer(n)); lua_setfield(L, -2, "items") }
        if let n = ev.failed { lua_pushinteger(L, lua_Integer(n)); lua_setfield(L, -2, "failed") }
        if let d = ev.duration { lua_pushnumber(L, d); lua_setfield(L, -2, "duration") }
    }
}
