import CLua
import Foundation
import ShareFlow

/// `sf.admin` (operator actions), `sf.json` (encoding for logs) and `sf.plugins` (trusted
/// scripts only).
extension ShareFlowModule {
    static func installAdministration(_ lua: LuaState, _ host: ScriptHost, _ b: Bindings) {
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(function: "admin.pendingInvitations") { [unowned b] call in
            var age = 0.0
            if !call.isNil(1) {
                try call.table(1)
                try call.checkKeys(1, allowed: ["olderThan"])
                age = try call.numberField(1, "olderThan") ?? 0
                guard age.isFinite, age >= 0 else {
                    throw call.argumentError(1, "field 'olderThan' must be a finite number of seconds, 0 or more")
                }
            }
            let invitations = try b.raising { try b.engine.pendingInvitations(olderThan: age) }
            let now = Date().timeIntervalSince1970
            b.pushList(invitations) { inv in
                lua_createtable(call.L, 0, 6)
                lua.push(string: inv.participantID); lua_setfield(call.L, -2, "participantID")
                lua.push(string: inv.shareURL); lua_setfield(call.L, -2, "url")
                if let t = inv.shareTitle { lua.push(string: t); lua_setfield(call.L, -2, "title") }
                b.push(inv.lookupInfo); lua_setfield(call.L, -2, "lookupInfo")
                lua_pushnumber(call.L, inv.addedAt); lua_setfield(call.L, -2, "addedAt")
                lua_pushnumber(call.L, now - inv.addedAt); lua_setfield(call.L, -2, "age")
            }
            return 1
        }
        lua_setfield(L, -2, "pendingInvitations")
        lua.push(function: "admin.removeParticipant") { [unowned b] call in
            let id = try call.string(1)
            let reasonName = try call.optionalString(2) ?? "removedByOwner"
            guard let reason = RemovalReason(rawValue: reasonName) else {
                throw call.argumentError(2, "unknown reason '\(reasonName)' (expected removedByOwner, left, publicPermissionChanged, shareDeleted, expired)")
            }
            let removed = try b.raising { try b.engine.removeParticipant(id, reason: reason) }
            lua_pushboolean(call.L, removed ? 1 : 0)
            return 1
        }
        lua_setfield(L, -2, "removeParticipant")
        lua.push(function: "admin.shares") { [unowned b] call in
            var owner: String?, participant: String?, container: String?
            if !call.isNil(1) {
                try call.table(1)
                try call.checkKeys(1, allowed: ["owner", "participant", "container"])
                owner = try call.stringField(1, "owner")
                participant = try call.stringField(1, "participant")
                container = try call.stringField(1, "container")
            }
            let audits = try b.raising { try b.engine.auditShares(owner: owner, participant: participant, container: container) }
            try call.state.checkStack(6)
            b.pushList(audits) { a in
                lua_createtable(call.L, 0, 9)
                lua.push(string: a.url); lua_setfield(call.L, -2, "url")
                lua.push(string: a.containerIdentifier); lua_setfield(call.L, -2, "container")
                lua.push(string: a.environment.rawValue); lua_setfield(call.L, -2, "environment")
                b.push(a.shareRecordID); lua_setfield(call.L, -2, "recordID")
                if let t = a.title { lua.push(string: t); lua_setfield(call.L, -2, "title") }
                lua_createtable(call.L, 0, 2)
                lua.push(string: a.ownerUserRecordID); lua_setfield(call.L, -2, "userRecordID")
                b.push(a.ownerLookupInfo); lua_setfield(call.L, -2, "lookupInfo")
                lua_setfield(call.L, -2, "owner")
                b.push(a.rootRecordID); lua_setfield(call.L, -2, "rootRecordID")
                lua.push(string: a.publicPermission.rawValue); lua_setfield(call.L, -2, "publicPermission")
                b.pushList(a.participants) { p in
                    lua_createtable(call.L, 0, 6)
                    lua.push(string: p.participantID); lua_setfield(call.L, -2, "participantID")
                    b.push(p.lookupInfo); lua_setfield(call.L, -2, "lookupInfo")
                    if let id = p.userRecordID { lua.push(string: id); lua_setfield(call.L, -2, "userRecordID") }
                    lua.push(string: p.role.rawValue); lua_setfield(call.L, -2, "role")
                    lua.push(string: p.permission.rawValue); lua_setfield(call.L, -2, "permission")
                    lua.push(string: p.acceptanceStatus.rawValue); lua_setfield(call.L, -2, "acceptanceStatus")
                }
                lua_setfield(call.L, -2, "participants")
            }
            return 1
        }
        lua_setfield(L, -2, "shares")
        lua_setfield(L, -2, "admin")

        lua_createtable(L, 0, 1)
        lua.push(function: "json.encode") { call in
            var out: [UInt8] = []
            var seen = Set<UnsafeRawPointer>()
            var budget = maxJSONValues
            try encodeJSON(call, 1, into: &out, depth: 0, seen: &seen, budget: &budget)
            out.withUnsafeBytes { _ = lua_pushlstring(call.L, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
            return 1
        }
        lua_setfield(L, -2, "encode")
        lua_setfield(L, -2, "json")

        // Plugins: present where the process manages some (trusted scripts and the console).
        lua_createtable(L, 0, 5)
        lua.push(function: "plugins.list") { [unowned host] call in
            guard let plugins = host.plugins else { lua_createtable(call.L, 0, 0); return 1 }
            let infos = plugins.info()
            lua_createtable(call.L, Int32(infos.count), 0)
            for (n, info) in infos.enumerated() {
                lua_createtable(call.L, 0, 6)
                call.state.push(string: info.name); lua_setfield(call.L, -2, "name")
                try call.state.push(info.version.map { .string($0) } ?? .nil); lua_setfield(call.L, -2, "version")
                try call.state.push(info.description.map { .string($0) } ?? .nil); lua_setfield(call.L, -2, "description")
                call.state.push(string: info.folder); lua_setfield(call.L, -2, "folder")
                lua_pushboolean(call.L, info.enabled ? 1 : 0); lua_setfield(call.L, -2, "enabled")
                lua_pushboolean(call.L, info.loaded ? 1 : 0); lua_setfield(call.L, -2, "loaded")
                lua_rawseti(call.L, -2, lua_Integer(n + 1))
            }
            return 1
        }
        lua_setfield(L, -2, "list")
        lua.push(function: "plugins.load") { [unowned host] call in
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
        lua_setfield(L, -2, "load")
        lua.push(function: "plugins.unload") { [unowned host] call in
            try managed(host).unload(try call.string(1))
            return 0
        }
        lua_setfield(L, -2, "unload")
        lua.push(function: "plugins.reload") { [unowned host] call in
            let plugins = try managed(host)
            let names: [String]
            do { names = try plugins.reload(try call.optionalString(1)) } catch let e as PluginError { throw LuaRaise.message(e.description) }
            call.state.push(strings: names)
            return 1
        }
        lua_setfield(L, -2, "reload")
        lua.push(function: "plugins.loaded") { [unowned host] call in
            call.state.push(strings: (host.plugins?.loadedNames ?? []))
            return 1
        }
        lua_setfield(L, -2, "loaded")
        lua.push(function: "plugins.dataFolder") { [unowned host] call in
            let plugins = try managed(host)
            call.state.push(string: (plugins.dataDirectory as NSString).appendingPathComponent(try call.string(1)))
            return 1
        }
        lua_setfield(L, -2, "dataFolder")
        lua_setfield(L, -2, "plugins")
    }

    private static func managed(_ host: ScriptHost) throws -> PluginManager {
        guard let p = host.plugins else { throw LuaRaise.message("plugins are managed only by trusted scripts and the console") }
        return p
    }

    /// JSON for a Lua value: tables with only 1…n keys are arrays; objects print as their
    /// `tostring`; cycles and functions are errors naming the problem.
    /// The most values one `sf.json.encode` visits, and the longest text it makes: a table
    /// shared many times over (a DAG) or a long string repeated would otherwise make the host
    /// work and grow without end, out of the budget's reach.
    static let maxJSONValues = 100_000
    static let maxJSONBytes = 16 << 20

    static func encodeJSON(_ call: LuaCall, _ index: Int32, into out: inout [UInt8], depth: Int,
                           seen: inout Set<UnsafeRawPointer>, budget: inout Int) throws {
        let L = call.L, lua = call.state
        let i = lua_absindex(L, index)
        budget -= 1
        if budget & 1023 == 0 { try lua.checkBudget() }
        guard budget >= 0 else { throw call.argumentError(1, "more than \(maxJSONValues) values to encode") }
        guard out.count <= maxJSONBytes else { throw call.argumentError(1, "encoded text longer than \(maxJSONBytes >> 20) MiB") }
        guard depth < LuaState.maxDepth else {
            throw call.argumentError(1, "table nested more than \(LuaState.maxDepth) levels deep")
        }
        try lua.checkStack(3)
        switch lua_type(L, i) {
        case LUA_TNIL, LUA_TNONE: out.add("null")
        case LUA_TBOOLEAN: out.add(lua_toboolean(L, i) != 0 ? "true" : "false")
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 { out.add(String(clua_tointeger(L, i))) }
            else {
                let d = clua_tonumber(L, i)
                out.add(d.isFinite ? String(d) : "null")
            }
        case LUA_TSTRING: try quote(lua.string(at: i) ?? "", into: &out, call: call)
        case LUA_TTABLE:
            let id = lua_topointer(L, i)!
            guard seen.insert(id).inserted else { throw call.argumentError(1, "table contains a cycle") }
            defer { seen.remove(id) }
            let n = Int(lua_rawlen(L, i))
            var keys = 0
            lua_pushnil(L)
            while lua_next(L, i) != 0 { keys += 1; lua.pop(); try lua.budgetStep() }
            if keys == n && n > 0 {
                out.add("[")
                for k in 1...n {
                    if k > 1 { out.add(",") }
                    lua_rawgeti(L, i, lua_Integer(k))
                    try encodeJSON(call, -1, into: &out, depth: depth + 1, seen: &seen, budget: &budget)
                    lua.pop()
                }
                out.add("]")
            } else {
                out.add("{")
                // Keys first, raw: a key's __tostring (below) may change the table, and a
                // lua_next after that would raise here, in Swift.
                lua_createtable(L, Int32(clamping: keys), 0)
                let keyList = lua_gettop(L)
                var count: lua_Integer = 0
                lua_pushnil(L)
                while lua_next(L, i) != 0 {
                    lua.pop()
                    try lua.budgetStep()
                    lua_pushvalue(L, -1)
                    count += 1
                    lua_rawseti(L, keyList, count)
                }
                defer { lua_settop(L, keyList - 1) }
                for k in stride(from: 1, through: count, by: 1) {
                    lua_rawgeti(L, keyList, k)
                    let key: String
                    if lua_type(L, -1) == LUA_TSTRING { key = lua.string(at: -1) ?? "" }
                    else { key = ShareFlowModule.describe(lua, at: lua_absindex(L, -1)) }
                    if k > 1 { out.add(",") }
                    try quote(key, into: &out, call: call)
                    out.add(":")
                    lua_rawget(L, i)
                    try encodeJSON(call, -1, into: &out, depth: depth + 1, seen: &seen, budget: &budget)
                    lua.pop()
                }
                out.add("}")
            }
        case LUA_TUSERDATA:
            try quote(ShareFlowModule.describe(lua, at: i), into: &out, call: call)
        default:
            throw call.argumentError(1, "cannot encode a \(call.typeName(i)) as JSON")
        }
    }

    /// `s` as a JSON string, appended to `out`; the size cap and the budget are checked as it
    /// goes (a string can be long, and this runs in Swift, where no hook reaches).
    static func quote(_ s: String, into out: inout [UInt8], call: LuaCall) throws {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        var n = 0
        for b in s.utf8 {
            n += 1
            if n & 0xFFFF == 0 {
                try call.state.checkBudget()
                guard out.count <= maxJSONBytes else { throw call.argumentError(1, "encoded text longer than \(maxJSONBytes >> 20) MiB") }
            }
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), b]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), b]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

private extension Array where Element == UInt8 {
    mutating func add(_ text: String) { append(contentsOf: text.utf8) }
}
