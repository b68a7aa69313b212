import CLua
import Foundation
import ShareFlow

/// Conversions between ShareFlow values and Lua values. Value types (IDs, lookup infos,
/// identities, errors) are plain tables with a small metatable for `tostring`.
extension Bindings {
    // MARK: Lookup infos (R1)

    static let lookupKeys: Set<String> = ["emailAddress", "phoneNumber", "userRecordID", "email", "phone"]

    /// A lookup from a `LookupInfo{...}` table, a plain table with one of the fields, or a
    /// string (email, phone or userRecordID). Bad values become a failed request, not a raise:
    /// R1 makes them per-item errors.
    func lookupRequest(_ call: LuaCall, _ i: Int32, position: Int32) throws -> LookupRequest {
        let L = call.L
        switch lua_type(L, i) {
        case LUA_TSTRING:
            let s = call.state.string(at: i)!
            if s.hasPrefix("_") { return LookupRequest(userRecordID: s) }
            return s.contains("@") ? LookupRequest(emailAddress: s) : LookupRequest(phoneNumber: s)
        case LUA_TTABLE:
            try call.checkKeys(i, allowed: Bindings.lookupKeys.union(["__lookup"]))
            let email = try call.stringField(i, "emailAddress") ?? call.stringField(i, "email")
            let phone = try call.stringField(i, "phoneNumber") ?? call.stringField(i, "phone")
            let user = try call.stringField(i, "userRecordID")
            return LookupRequest(emailAddress: email, phoneNumber: phone, userRecordID: user)
        default:
            throw call.argumentError(position, "LookupInfo or table expected, got \(call.typeName(i))")
        }
    }

    /// The list of lookups in the table at `i`.
    func lookupRequests(_ call: LuaCall, _ i: Int32) throws -> [LookupRequest] {
        let abs = lua_absindex(call.L, i)
        return try list(call, abs) { _ in try lookupRequest(call, -1, position: abs) }
    }

    func push(_ lookup: LookupInfo?) {
        guard let lookup else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(string: lookup.value)
        lua.setField(-2, lookup.staticKind)
        setMetatable(.lookupInfo)
    }

    // MARK: IDs

    func push(_ zoneID: RecordZoneID) {
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(string: zoneID.zoneName); lua_setfield(L, -2, "zoneName")
        lua.push(string: zoneID.ownerName); lua_setfield(L, -2, "ownerName")
        setMetatable(.recordZoneID)
    }

    func push(_ recordID: RecordID?) {
        guard let recordID else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(string: recordID.recordName); lua_setfield(L, -2, "recordName")
        push(recordID.zoneID); lua_setfield(L, -2, "zoneID")
        setMetatable(.recordID)
    }

    func push(_ zone: RecordZone) {
        let L = lua.L
        lua_createtable(L, 0, 2)
        push(zone.zoneID); lua_setfield(L, -2, "zoneID")
        lua.push(string: zone.zoneID.zoneName); lua_setfield(L, -2, "zoneName")
        setMetatable(.recordZone)
    }

    /// A zone ID from a zone table (`{zoneID = …}`), a zone ID table, or a zone name (the
    /// caller's own zone).
    func zoneID(_ call: LuaCall, _ i: Int32, position: Int32, defaultOwner: () throws -> String) throws -> RecordZoneID {
        let L = call.L
        if lua_type(L, i) == LUA_TSTRING {
            return RecordZoneID(zoneName: call.state.string(at: i)!, ownerName: try defaultOwner())
        }
        guard lua_type(L, i) == LUA_TTABLE else {
            throw call.argumentError(position, "zone or zoneID expected, got \(call.typeName(i))")
        }
        var abs = lua_absindex(L, i)
        // A zone table holds its zoneID one level down; no deeper (a cycle would never end).
        let nested = call.field(abs, "zoneID") == LUA_TTABLE
        defer { call.state.pop() }
        if nested { abs = lua_absindex(L, -1) }
        guard let name = try call.stringField(abs, "zoneName") else {
            throw call.argumentError(position, "zoneID needs zoneName")
        }
        return RecordZoneID(zoneName: name, ownerName: try call.stringField(abs, "ownerName") ?? defaultOwner())
    }

    /// A record ID from a record, a share or an ID table `{recordName=, zoneID=}`.
    func recordID(_ call: LuaCall, _ i: Int32, position: Int32) throws -> RecordID {
        if let record = record(at: i) { return record.recordID }
        guard lua_type(call.L, i) == LUA_TTABLE else {
            throw call.argumentError(position, "record or recordID expected, got \(call.typeName(i))")
        }
        let abs = lua_absindex(call.L, i)
        guard let name = try call.stringField(abs, "recordName") else {
            throw call.argumentError(position, "recordID needs recordName")
        }
        // R24, as sf.Record: no zoneID is the default zone of whichever database the ID is used
        // with; a zoneID without ownerName is the caller's own zone (CKCurrentUserDefaultName).
        switch call.field(abs, "zoneID") {
        case LUA_TNIL:
            call.state.pop()
            return RecordID(recordName: name, zoneID: .default)
        case LUA_TTABLE, LUA_TSTRING:
            defer { call.state.pop() }
            let zone = try zoneID(call, -1, position: position, defaultOwner: { RecordZoneID.currentUserName })
            return RecordID(recordName: name, zoneID: zone)
        default:
            let got = call.typeName(-1)
            call.state.pop()
            throw call.argumentError(position, "recordID's zoneID must be a zone or zoneID table, got \(got)")
        }
    }

    // MARK: Identities

    func push(_ name: NameComponents?) {
        guard let name else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 4)
        let parts: [(String, String?)] = [("prefix", name.namePrefix), ("given", name.givenName), ("middle", name.middleName),
                                          ("family", name.familyName), ("suffix", name.nameSuffix), ("nickname", name.nickname)]
        for (k, v) in parts {
            if let v { lua.push(string: v); lua_setfield(L, -2, k) }
        }
        setMetatable(.nameComponents)
    }

    func nameComponents(_ call: LuaCall, _ i: Int32, position: Int32) throws -> NameComponents {
        try call.checkKeys(i, allowed: ["given", "family", "middle", "prefix", "suffix", "nickname", "givenName", "familyName"])
        return NameComponents(namePrefix: try call.stringField(i, "prefix"),
                              givenName: try call.stringField(i, "given") ?? call.stringField(i, "givenName"),
                              middleName: try call.stringField(i, "middle"),
                              familyName: try call.stringField(i, "family") ?? call.stringField(i, "familyName"),
                              nameSuffix: try call.stringField(i, "suffix"), nickname: try call.stringField(i, "nickname"))
    }

    func push(_ identity: UserIdentity?) {
        guard let identity else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 5)
        if let id = identity.userRecordID { lua.push(string: id); lua_setfield(L, -2, "userRecordID") }
        push(identity.lookupInfo); lua_setfield(L, -2, "lookupInfo")
        push(identity.nameComponents); lua_setfield(L, -2, "nameComponents")
        lua_pushboolean(L, identity.hasiCloudAccount ? 1 : 0); lua_setfield(L, -2, "hasiCloudAccount")
        lua.push(strings: identity.contactIdentifiers)
        lua_setfield(L, -2, "contactIdentifiers")
        setMetatable(.userIdentity)
    }

    // MARK: Errors

    /// An error value: `code`, `codeNumber`, `message`, `partialErrors` (item → error),
    /// `retryAfter`, and `__tostring`.
    func push(_ error: ShareFlowError?) {
        guard let error else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 5)
        lua.push(string: error.code.rawValue); lua_setfield(L, -2, "code")
        lua_pushinteger(L, lua_Integer(error.codeNumber)); lua_setfield(L, -2, "codeNumber")
        lua.push(string: error.message); lua_setfield(L, -2, "message")
        if let r = error.retryAfter { lua_pushnumber(L, r); lua_setfield(L, -2, "retryAfter") }
        if !error.partialErrors.isEmpty {
            lua_createtable(L, 0, Int32(error.partialErrors.count))
            for (item, e) in error.partialErrors {
                push(e)
                lua_setfield(L, -2, item)
            }
            lua_setfield(L, -2, "partialErrors")
        }
        // R21: copies made for this error, so the caller may merge into them and save.
        for (key, record) in [("serverRecord", error.serverRecord), ("clientRecord", error.clientRecord),
                              ("ancestorRecord", error.ancestorRecord)] {
            guard let record else { continue }
            push(record: record)
            lua.markWritable(at: -1)
            lua_setfield(L, -2, key)
        }
        setMetatable(.error)
    }

    /// Raises `error` as a Lua error value (for functions whose failures are not data).
    func raise(_ error: ShareFlowError) -> LuaRaise {
        LuaRaise { [unowned self] _ in self.push(error) }
    }

    // MARK: Fields

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
            lua_pushnumber(L, date.timeIntervalSince1970); lua_setfield(L, -2, "seconds")
            setMetatable(.date)
        case .location(let l):
            lua_createtable(L, 0, 2)
            lua_pushnumber(L, l.latitude); lua_setfield(L, -2, "latitude")
            lua_pushnumber(L, l.longitude); lua_setfield(L, -2, "longitude")
            setMetatable(.location)
        case .reference(let id, let action):
            // Also `recordName` and `zoneID`, so a reference reads (and is accepted) as a record ID.
            guard lua_checkstack(L, 4) != 0 else { return lua_pushnil(L) }
            lua_createtable(L, 0, 4)
            push(id); lua_setfield(L, -2, "recordID")
            lua.push(string: action.rawValue); lua_setfield(L, -2, "action")
            lua.push(string: id.recordName); lua_setfield(L, -2, "recordName")
            push(id.zoneID); lua_setfield(L, -2, "zoneID")
            setMetatable(.reference)
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
                case .bytes, .date, .location, .reference: return try typedValue(call, abs, kind: kind, key: key, position: position)
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
                    throw call.argumentError(position, n == 0
                        ? "field '\(key)' is a dictionary; a field holds a value or a list (R23)"
                        : "field '\(key)' has keys other than 1...\(n); a list is a sequence without holes (R23)")
                }
            }
            guard count == n else {
                throw call.argumentError(position, "field '\(key)' has holes (\(count) values under keys 1...\(n)); a list is a sequence without holes (R23)")
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
            throw call.argumentError(position, "field '\(key)' cannot hold a \(call.typeName(i)) (string, number, boolean, sf.Bytes, sf.Date, sf.Location, a reference, or a list of one of these) (R23)")
        }
    }

    /// An `sf.Bytes`, `sf.Date`, `sf.Location` or `sf.Reference` table's value, read raw (the
    /// table is the script's: its fields are checked again here).
    private func typedValue(_ call: LuaCall, _ abs: Int32, kind: ValueTable, key: String, position: Int32) throws -> FieldValue {
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
        case .location: return .location(Location(latitude: try number("latitude"), longitude: try number("longitude")))
        default:
            guard call.field(abs, "recordID") == LUA_TTABLE else {
                call.state.pop()
                throw call.argumentError(position, "field '\(key)': Reference.recordID must be a recordID")
            }
            defer { call.state.pop() }
            let id = try recordID(call, -1, position: position)
            let action = try call.stringField(abs, "action").map { name in
                guard let a = ReferenceAction(rawValue: name) else {
                    throw call.argumentError(position, "field '\(key)': invalid reference action '\(name)' (expected one of: none, deleteSelf)")
                }
                return a
            } ?? ReferenceAction.none
            return .reference(id, action: action)
        }
    }

    /// Which of the host's value tables the table at `abs` is, by its metatable (compared raw:
    /// a script cannot give a table one of these metatables).
    func valueKind(at abs: Int32) -> ValueTable? {
        let L = lua.L
        guard lua_getmetatable(L, abs) != 0 else { return nil }
        defer { lua.pop() }
        for kind in ValueTable.allCases {
            lua_rawgeti(L, clua_registryindex(), lua_Integer(valueMetatables[kind.rawValue]))
            let same = lua_rawequal(L, -1, -2) != 0
            lua.pop()
            if same { return kind }
        }
        return nil
    }

    // MARK: Metatables for value tables

    /// Sets the value-table metatable of `kind` on the table on top of the stack.
    func setMetatable(_ kind: ValueTable) {
        lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(valueMetatables[kind.rawValue]))
        lua_setmetatable(lua.L, -2)
    }

    /// `__tostring` and `__name` for the value tables.
    func registerValueMetatables() {
        let L = lua.L
        valueMetatables = []
        for kind in ValueTable.allCases {
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
            if [.bytes, .date, .location, .reference].contains(kind) {
                // Two values are equal when they store the same (R23 keeps them exactly).
                lua.push(function: "__eq") { [unowned self] call in
                    let a = try? fieldValue(call, 1, key: name, position: 1)
                    let b = try? fieldValue(call, 2, key: name, position: 2)
                    lua_pushboolean(call.L, a != nil && a == b ? 1 : 0)
                    return 1
                }
                lua_setfield(L, -2, "__eq")
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
            valueMetatables.append(luaL_ref(L, clua_registryindex()))
        }
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
        case "Bytes", "Date", "Location", "Reference":
            guard let kind = ValueTable.allCases.first(where: { $0.name == name }),
                  let value = try? typedValue(call, 1, kind: kind, key: name, position: 1) else { return name + "(?)" }
            switch value {
            case .reference(let id, let action): return "Reference(\(id.recordName) in \(id.zoneID.zoneName)\(action == .none ? "" : ", \(action.rawValue)"))"
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
    case bytes, date, location, reference

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
        }
    }
}
