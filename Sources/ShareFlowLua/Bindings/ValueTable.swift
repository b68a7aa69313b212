import CLua
import Foundation
import ShareFlow

/// The value tables: IDs, lookup infos, identities, errors and the typed field values are
/// plain tables with a small metatable (`__name`, `__tostring`, and `__eq` for the typed values)
/// that tells them apart; each type's own conversions are in its `Bindings+Type.swift`.
extension Bindings {
    /// Which of the host's value tables the table at `abs` is, by its metatable (compared raw:
    /// a script cannot give a table one of these metatables).
    func valueKind(at abs: Int32) -> ValueTable? {
        let L = lua.L
        guard lua_getmetatable(L, abs) != 0 else { return nil }
        defer { lua.pop() }
        // A kind whose metatable is not made yet has no table of it.
        for kind in ValueTable.allCases where valueMetatables[kind.rawValue] != LUA_NOREF {
            lua_rawgeti(L, clua_registryindex(), lua_Integer(valueMetatables[kind.rawValue]))
            let same = lua_rawequal(L, -1, -2) != 0
            lua.pop()
            if same { return kind }
        }
        return nil
    }

    // MARK: Metatables for value tables

    /// Sets the value-table metatable of `kind` on the table on top of the stack, made first
    /// if this state has none yet. (With no room on the stack to make it, the table is left
    /// plain: a state within a few slots of Lua's stack limit.)
    func setMetatable(_ kind: ValueTable) {
        var ref = valueMetatables[kind.rawValue]
        if _slowPath(ref == LUA_NOREF) { ref = makeValueMetatable(kind) }
        guard ref != LUA_NOREF else { return }
        lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(ref))
        lua_setmetatable(lua.L, -2)
    }

    /// None made yet: each kind's metatable is made when a table of it is first made in this
    /// state (`setMetatable`). Fourteen metatables, each with Swift functions, were a fifth of
    /// every state's start, and most states make tables of a few kinds (issue 48).
    func registerValueMetatables() {
        valueMetatables = Array(repeating: LUA_NOREF, count: ValueTable.allCases.count)
    }

    /// `__tostring` and `__name` for the value tables of `kind`; returns its registry ref. As
    /// `LuaClass.register`: raw operations and pushes after a stack check, made inside the
    /// protected call that first needs it.
    private func makeValueMetatable(_ kind: ValueTable) -> Int32 {
        let L = lua.L
        // The metatable, a function being made with its box and the box's metatable, the
        // asset's method table: 6 is room to spare.
        guard lua_checkstack(L, 6) != 0 else { return LUA_NOREF }
        let name = kind.name
        luaL_newmetatable(L, "shareflow." + name)
        lua.push(string: name)
        lua_setfield(L, -2, "__name")
        // getmetatable gives the name: a metatable the host sets on new tables must not
        // gain a __gc (a finalizer no hook stops) or anything else from Lua.
        lua.push(string: name)
        lua_setfield(L, -2, "__metatable")
        lua.push(function: "__tostring") { [unowned self] call in
            call.state.push(string: self.describeValueTable(call, name: name))
            return 1
        }
        lua_setfield(L, -2, "__tostring")
        if [.bytes, .date, .location, .reference, .encrypted, .asset].contains(kind) {
            // Two values are equal when they store the same (R23 keeps them exactly).
            lua.push(function: "__eq") { [unowned self] call in
                let a = try? fieldValue(call, 1, key: name, position: 1)
                let b = try? fieldValue(call, 2, key: name, position: 2)
                lua_pushboolean(call.L, a != nil && a == b ? 1 : 0)
                return 1
            }
            lua_setfield(L, -2, "__eq")
        }
        if kind == .asset {
            // Its one method, as liolib's files have theirs: `asset:read()`.
            lua_createtable(L, 0, 1)
            lua.push(function: "read") { [unowned self] call in try self.readAsset(call) }
            lua_setfield(L, -2, "read")
            lua_setfield(L, -2, "__index")
        }
        if kind == .bytes {
            lua.push(function: "__len") { call in
                let n = call.field(1, "data") == LUA_TSTRING ? lua_Integer(lua_rawlen(call.L, -1)) : 0
                call.state.pop()
                lua_pushinteger(call.L, n)
                return 1
            }
            lua_setfield(L, -2, "__len")
        }
        // Kept by ref: pushing a value table is on the events' hot path.
        let ref = luaL_ref(L, clua_registryindex())
        valueMetatables[kind.rawValue] = ref
        return ref
    }

    private func describeValueTable(_ call: LuaCall, name: String) -> String {
        let s = { (k: String) in (try? call.stringField(1, k)) ?? nil }
        switch name {
        case "LookupInfo":
            for k in ["emailAddress", "phoneNumber", "userRecordID"] { if let v = s(k) { return "LookupInfo(\(k): \(v))" } }
            return "LookupInfo()"
        case "RecordZoneID": return "RecordZoneID(\(s("zoneName") ?? "?"), owner: \(s("ownerName") ?? "?"))"
        case "RecordZone": return "RecordZone(\(s("zoneName") ?? "?"))"
        case "RecordID":
            var owner = "?"
            if call.field(1, "zoneID") == LUA_TTABLE { owner = ((try? call.stringField(-1, "zoneName")) ?? nil) ?? "?" }
            call.state.pop()
            return "RecordID(\(s("recordName") ?? "?") in \(owner))"
        case "NameComponents":
            return [s("prefix"), s("given"), s("middle"), s("family"), s("suffix")].compactMap { $0 }.joined(separator: " ")
        case "UserIdentity":
            var parts: [String] = []
            if call.field(1, "nameComponents") == LUA_TTABLE {
                parts += [((try? call.stringField(-1, "given")) ?? nil), ((try? call.stringField(-1, "family")) ?? nil)].compactMap { $0 }
            }
            call.state.pop()
            if call.field(1, "lookupInfo") == LUA_TTABLE {
                for k in ["emailAddress", "phoneNumber", "userRecordID"] {
                    if let v = (try? call.stringField(-1, k)) ?? nil { parts.append(v) }
                }
            }
            call.state.pop()
            if call.field(1, "hasiCloudAccount") == LUA_TBOOLEAN, lua_toboolean(call.L, -1) == 0 { parts.append("(no account)") }
            call.state.pop()
            return "UserIdentity(\(parts.joined(separator: " ")))"
        case "Error":
            let code = s("code") ?? "?"
            var n = ""
            if call.field(1, "codeNumber") == LUA_TNUMBER { n = " (\(clua_tointeger(call.L, -1)))" }
            call.state.pop()
            var text = "\(code)\(n): \(s("message") ?? "")"
            if call.field(1, "partialErrors") == LUA_TTABLE {
                var lines: [String] = []
                lua_pushnil(call.L)
                while lua_next(call.L, -2) != 0 {
                    if let k = call.state.string(at: -2), lua_type(call.L, -1) == LUA_TTABLE {
                        let c = ((try? call.stringField(-1, "code")) ?? nil) ?? "?"
                        let m = ((try? call.stringField(-1, "message")) ?? nil) ?? ""
                        lines.append("  \(k): \(c): \(m)")
                    }
                    call.state.pop()
                }
                text += "\n" + lines.sorted().joined(separator: "\n")
            }
            call.state.pop()
            return text
        case "Subscription":
            // `Subscription(query long-trips: Trip in Trips)`: kind, ID, and the zone if any.
            var zone: String?
            if call.field(1, "zoneID") == LUA_TTABLE { zone = (try? call.stringField(-1, "zoneName")) ?? nil }
            call.state.pop()
            let kind = s("subscriptionType") ?? "?"
            let what = kind == "query" ? "\(s("recordType") ?? "?") in \(zone ?? "every zone")" : zone
            return "Subscription(\(kind) \(s("subscriptionID") ?? "?")\(what.map { ": " + $0 } ?? ""))"
        case "Bytes", "Date", "Location", "Reference", "Encrypted", "Asset":
            guard let kind = ValueTable.allCases.first(where: { $0.name == name }),
                let value = try? typedValue(call, 1, kind: kind, key: name, position: 1)
            else { return name + "(?)" }
            switch value {
            case .reference(let id, let action):
                return "Reference(\(id.recordName) in \(id.zoneID.zoneName)\(action == .none ? "" : ", \(action.rawValue)"))"
            default: return value.description
            }
        default: return name
        }
    }
}

/// The plain tables the bindings give a metatable (`__name`, `__tostring`); the raw value
/// is the position in `Bindings.valueMetatables`.
enum ValueTable: Int, CaseIterable {
    case lookupInfo, recordZoneID, recordID, recordZone, nameComponents, userIdentity, error
    case bytes, date, location, reference, encrypted, asset
    case subscription

    var name: String {
        switch self {
        case .lookupInfo: "LookupInfo"
        case .recordZoneID: "RecordZoneID"
        case .recordID: "RecordID"
        case .recordZone: "RecordZone"
        case .nameComponents: "NameComponents"
        case .userIdentity: "UserIdentity"
        case .error: "Error"
        case .bytes: "Bytes"
        case .date: "Date"
        case .location: "Location"
        case .reference: "Reference"
        case .encrypted: "Encrypted"
        case .asset: "Asset"
        case .subscription: "Subscription"
        }
    }
}
