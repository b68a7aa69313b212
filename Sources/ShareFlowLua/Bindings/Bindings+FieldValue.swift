import CLua
import Foundation
import ShareFlow

/// Field values (R23) both ways: strings, numbers, booleans, lists and the typed values
/// `Bytes`, `Date`, `Location` and `Reference` (value tables with a metatable).
extension Bindings {
    func push(_ value: FieldValue) {
        let L = lua.L
        switch value {
        case .string(let s): lua.push(string: s)
        case .integer(let i): lua_pushinteger(L, lua_Integer(i))
        case .double(let d): lua_pushnumber(L, d)
        case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
        case .bytes(let data):
            lua_createtable(L, 0, 1)
            data.withUnsafeBytes { raw in
                _ = lua_pushlstring(L, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
            }
            lua_setfield(L, -2, "data")
            setMetatable(.bytes)
        case .date(let date):
            lua_createtable(L, 0, 1)
            lua_pushnumber(L, date.timeIntervalSince1970)
            lua_setfield(L, -2, "seconds")
            setMetatable(.date)
        case .location(let l):
            lua_createtable(L, 0, 2)
            lua_pushnumber(L, l.latitude)
            lua_setfield(L, -2, "latitude")
            lua_pushnumber(L, l.longitude)
            lua_setfield(L, -2, "longitude")
            for detail in Location.Detail.allCases {
                guard let v = l[detail] else { continue }
                lua_pushnumber(L, v)
                lua_setfield(L, -2, detail.rawValue)
            }
            if let t = l.timestamp {
                lua_pushnumber(L, t.timeIntervalSince1970)
                lua_setfield(L, -2, "timestamp")
            }
            setMetatable(.location)
        case .reference(let id, let action):
            // Also `recordName` and `zoneID`, so a reference reads (and is accepted) as a record ID.
            guard lua_checkstack(L, 4) != 0 else { return lua_pushnil(L) }
            lua_createtable(L, 0, 4)
            push(id)
            lua_setfield(L, -2, "recordID")
            lua.push(string: action.rawValue)
            lua_setfield(L, -2, "action")
            lua.push(string: id.recordName)
            lua_setfield(L, -2, "recordName")
            push(id.zoneID)
            lua_setfield(L, -2, "zoneID")
            setMetatable(.reference)
        case .encrypted(let inner):
            guard lua_checkstack(L, 4) != 0 else { return lua_pushnil(L) }
            lua_createtable(L, 0, 1)
            push(inner)
            lua_setfield(L, -2, "value")
            setMetatable(.encrypted)
        case .asset(let asset): push(asset: asset)
        case .list(let items):
            // Stored lists are as deep as a save allowed (LuaState.maxDepth).
            guard lua_checkstack(L, 4) != 0 else { return lua_pushnil(L) }
            lua_createtable(L, Int32(items.count), 0)
            for (n, item) in items.enumerated() {
                push(item)
                lua_rawseti(L, -2, lua_Integer(n + 1))
            }
        }
    }

    /// A field value from Lua (R23): string (valid UTF-8), integer, number (finite), boolean,
    /// `sf.Bytes`, `sf.Date`, `sf.Location`, `sf.Reference`, a record or recordID (a reference),
    /// or a list of these. Anything else (a dictionary, a sparse list, a list of lists, a
    /// function) is an error naming the field.
    /// `fresh`: a conversion of its own (one field set), not a part of a table's (`fieldTable`).
    func fieldValue(_ call: LuaCall, _ i: Int32, key: String, position: Int32, fresh: Bool = true) throws -> FieldValue? {
        if fresh { call.state.beginCopy() }
        let value = try fieldValue(call, i, key: key, position: position, inList: false)
        // The engine's own check, so an assignment fails where it is written, not at the save.
        if let value, let problem = value.problem(key: key) { throw call.argumentError(position, problem) }
        return value
    }

    private func fieldValue(_ call: LuaCall, _ i: Int32, key: String, position: Int32, inList: Bool) throws -> FieldValue? {
        let L = call.L
        switch lua_type(L, i) {
        case LUA_TNIL: return nil
        case LUA_TSTRING:
            var len = 0
            let p = lua_tolstring(L, i, &len)!
            try call.state.chargeCopy(len)
            let bytes = UnsafeRawBufferPointer(start: p, count: len)
            guard let s = String(validating: bytes, as: UTF8.self) else {
                throw call.argumentError(position, "field '\(key)' is not valid UTF-8 text; store bytes with sf.Bytes(s) (R23)")
            }
            return .string(s)
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, i) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 { return .integer(Int64(clua_tointeger(L, i))) }
            let d = clua_tonumber(L, i)
            guard d.isFinite else {
                throw call.argumentError(position, "field '\(key)' must be a finite number, got \(d) (R23)")
            }
            return .double(d)
        case LUA_TTABLE:
            let abs = lua_absindex(L, i)
            if let kind = valueKind(at: abs) {
                switch kind {
                case .encrypted where inList:
                    // Refused before it is read: an encrypted value holds a list that could hold it.
                    throw call.argumentError(position, "field '\(key)' holds an encrypted item; encrypt the whole field instead (R23)")
                case .bytes, .date, .location, .reference, .encrypted, .asset:
                    return try typedValue(call, abs, kind: kind, key: key, position: position)
                case .recordID: return .reference(try recordID(call, abs, position: position), action: .none)
                default: break
                }
            }
            if call.field(abs, "recordName") != LUA_TNIL {
                call.state.pop()
                return .reference(try recordID(call, abs, position: position), action: .none)
            }
            call.state.pop()
            guard !inList else {
                throw call.argumentError(position, "field '\(key)' is a list of lists; a list holds values of one other type (R23)")
            }
            try call.state.checkStack(4)
            // A list is a sequence: keys 1...n and nothing else (a dictionary or a list with
            // holes would lose entries).
            let n = call.length(abs)
            var count = 0
            lua_pushnil(L)
            while lua_next(L, abs) != 0 {
                count += 1
                try call.state.budgetStep()
                let fits = lua_isinteger(L, -2) != 0 && (1...max(n, 1)).contains(Int(clua_tointeger(L, -2)))
                call.state.pop()
                guard fits else {
                    call.state.pop()
                    throw call.argumentError(
                        position,
                        n == 0
                            ? "field '\(key)' is a dictionary; a field holds a value or a list (R23)"
                            : "field '\(key)' has keys other than 1...\(n); a list is a sequence without holes (R23)"
                    )
                }
            }
            guard count == n else {
                throw call.argumentError(
                    position,
                    "field '\(key)' has holes (\(count) values under keys 1...\(n)); a list is a sequence without holes (R23)"
                )
            }
            var items: [FieldValue] = []
            items.reserveCapacity(n)
            for m in 0..<n {
                try call.element(abs, m + 1)
                defer { call.state.pop() }
                if let v = try fieldValue(call, -1, key: "\(key)[\(m + 1)]", position: position, inList: true) { items.append(v) }
            }
            return .list(items)
        case LUA_TUSERDATA:
            if let r = record(at: i) { return .reference(r.recordID, action: .none) }
            fallthrough
        default:
            throw call.argumentError(
                position,
                "field '\(key)' cannot hold a \(call.typeName(i)) (string, number, boolean, sf.Bytes, sf.Date, sf.Location, sf.Asset, a reference, or a list of one of these, or sf.Encrypted of one) (R23)"
            )
        }
    }

    /// An `sf.Bytes`, `sf.Date`, `sf.Location` or `sf.Reference` table's value, read raw (the
    /// table is the script's: its fields are checked again here).
    func typedValue(_ call: LuaCall, _ abs: Int32, kind: ValueTable, key: String, position: Int32) throws -> FieldValue {
        let L = call.L
        func number(_ name: String) throws -> Double {
            defer { call.state.pop() }
            guard call.field(abs, name) == LUA_TNUMBER else {
                throw call.argumentError(position, "field '\(key)': \(kind.name).\(name) must be a number, got \(call.typeName(-1))")
            }
            return clua_tonumber(L, -1)
        }
        switch kind {
        case .bytes:
            defer { call.state.pop() }
            guard call.field(abs, "data") == LUA_TSTRING else {
                throw call.argumentError(position, "field '\(key)': Bytes.data must be a string, got \(call.typeName(-1))")
            }
            var len = 0
            let p = lua_tolstring(L, -1, &len)!
            try call.state.chargeCopy(len)
            return .bytes(Data(bytes: p, count: len))
        case .date: return .date(Date(timeIntervalSince1970: try number("seconds")))
        case .asset: return .asset(try assetValue(call, abs, key: key, position: position))
        case .encrypted:
            // The value inside, read as a field's (a list, say); wrapped once (R23 says the rest).
            guard call.field(abs, "value") != LUA_TNIL else {
                call.state.pop()
                throw call.argumentError(position, "field '\(key)': Encrypted.value must be a field value, got nil")
            }
            defer { call.state.pop() }
            // Refused before it is read: a table changed by hand may hold itself (`e.value = e`).
            if valueKind(at: lua_absindex(L, -1)) == .encrypted {
                throw call.argumentError(position, "field '\(key)' is encrypted twice; encrypt a value once (R23)")
            }
            guard let inner = try fieldValue(call, -1, key: key, position: position, inList: false) else {
                throw call.argumentError(position, "field '\(key)': Encrypted.value must be a field value, got nil")
            }
            return .encrypted(inner)
        case .location:
            var l = Location(latitude: try number("latitude"), longitude: try number("longitude"))
            func optional(_ name: String) throws -> Double? {
                defer { call.state.pop() }
                switch call.field(abs, name) {
                case LUA_TNIL: return nil
                case LUA_TNUMBER: return clua_tonumber(L, -1)
                default: throw call.argumentError(position, "field '\(key)': Location.\(name) must be a number, got \(call.typeName(-1))")
                }
            }
            for detail in Location.Detail.allCases { l[detail] = try optional(detail.rawValue) }
            l.timestamp = try optional("timestamp").map(Date.init(timeIntervalSince1970:))
            return .location(l)
        default:
            guard call.field(abs, "recordID") == LUA_TTABLE else {
                call.state.pop()
                throw call.argumentError(position, "field '\(key)': Reference.recordID must be a recordID")
            }
            defer { call.state.pop() }
            let id = try recordID(call, -1, position: position)
            let action =
                try call.stringField(abs, "action").map { name in
                    guard let a = ReferenceAction(rawValue: name) else {
                        throw call.argumentError(position, "field '\(key)': invalid reference action '\(name)' (expected one of: none, deleteSelf)")
                    }
                    return a
                } ?? ReferenceAction.none
            return .reference(id, action: action)
        }
    }
}
