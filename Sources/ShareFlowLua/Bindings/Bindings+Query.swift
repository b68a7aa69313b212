import CLua
import ShareFlow

/// O7 in Lua: `sf.QueryOperation{…}`, `db:query{…}` and `QueryCursor`. The predicate is
/// parsed and checked by the engine (`Query`); here only Lua values become Swift ones.
extension Bindings {
    static let queryKeys: Set<String> = ["recordType", "predicate", "arguments", "sortDescriptors"]

    /// A query from `{ recordType =, predicate =, arguments = {…}, sortDescriptors = { {key =, ascending =, relativeTo =} } }`
    /// at `i` (only the query keys are read).
    func query(_ call: LuaCall, _ i: Int32, position: Int32) throws -> Query {
        let abs = lua_absindex(call.L, i)
        guard let type = try call.stringField(abs, "recordType") else {
            throw call.argumentError(position, "field 'recordType' is required")
        }
        let format = try call.stringField(abs, "predicate") ?? "TRUEPREDICATE"
        var arguments: [FieldValue] = []
        if call.field(abs, "arguments") != LUA_TNIL {
            arguments = try list(call, -1) { n in
                guard let v = try fieldValue(call, -1, key: "arguments[\(n + 1)]", position: position) else {
                    throw call.argumentError(position, "arguments[\(n + 1)] is nil")
                }
                return v
            }
        }
        call.state.pop()
        var sorts: [SortDescriptor] = []
        if call.field(abs, "sortDescriptors") != LUA_TNIL {
            sorts = try list(call, -1) { n in
                if let key = call.state.string(at: -1) { return SortDescriptor(key: key) }
                guard lua_type(call.L, -1) == LUA_TTABLE, let key = try call.stringField(-1, "key") else {
                    throw call.argumentError(position, "sortDescriptors[\(n + 1)] must be a key or { key =, ascending = }")
                }
                let ascending = call.field(-1, "ascending") == LUA_TBOOLEAN ? lua_toboolean(call.L, -1) != 0 : true
                call.state.pop()
                var sort = SortDescriptor(key: key, ascending: ascending)
                // By distance from a place (CKLocationSortDescriptor): `relativeTo = sf.Location{…}`.
                if call.field(-1, "relativeTo") != LUA_TNIL {
                    defer { call.state.pop() }
                    guard case .location(let center)? = try fieldValue(call, -1, key: "relativeTo", position: position) else {
                        throw call.argumentError(position, "sortDescriptors[\(n + 1)].relativeTo must be an sf.Location")
                    }
                    sort.relativeLocation = center
                } else {
                    call.state.pop()
                }
                return sort
            }
        }
        call.state.pop()
        do {
            return try Query(recordType: type, predicate: format, arguments: arguments, sortDescriptors: sorts)
        } catch let e as ShareFlowError {
            throw call.argumentError(position, e.message)
        }
    }

    func push(cursor: QueryCursor?) {
        guard let cursor else { return lua_pushnil(lua.L) }
        cursorClass.push(cursor, in: lua)
    }

    func defineCursor() {
        cursorClass.describe { $0.description }
    }

    /// `db:query{ recordType =, predicate =, arguments =, sortDescriptors =, zone = or zoneID =,
    /// desiredKeys =, resultsLimit =, cursor = }` → records (with `.cursor` when more match), err.
    func defineQueryMethod() {
        databaseClass.method("query") { [unowned self] call, d in
            try call.table(2)
            try call.checkKeys(2, allowed: Bindings.queryKeys.union(["zone", "zoneID", "desiredKeys", "resultsLimit", "cursor"]))
            var cursor: QueryCursor?
            if call.field(2, "cursor") != LUA_TNIL {
                guard let c = call.state.object(at: -1, typeName: cursorClass.typeName, as: QueryCursor.self) else {
                    throw call.argumentError(2, "field 'cursor' must be a QueryCursor, got \(call.typeName(-1))")
                }
                cursor = c
            }
            call.state.pop()
            let q = cursor == nil ? try query(call, 2, position: 2) : nil
            var zone: RecordZoneID?
            if call.field(2, "zone") == LUA_TNIL {
                call.state.pop()
                call.field(2, "zoneID")
            }
            if lua_type(call.L, -1) != LUA_TNIL {
                zone = try zoneID(call, -1, position: 2, defaultOwner: { try d.zoneID("_").ownerName })
            }
            call.state.pop()
            var keys: [String]?
            if call.field(2, "desiredKeys") != LUA_TNIL { keys = try stringList(call, -1) }
            call.state.pop()
            let limit = try call.integerField(2, "resultsLimit", in: 1...Int(Int32.max))
            do {
                let page =
                    try cursor.map { try d.records(continuingMatchFrom: $0, desiredKeys: keys, resultsLimit: limit) }
                    ?? d.records(matching: q!, inZoneWith: zone, desiredKeys: keys, resultsLimit: limit)
                pushList(page.records) {
                    push(record: $0)
                    lua.markWritable(at: -1)
                }
                if page.cursor != nil {
                    push(cursor: page.cursor)
                    lua_setfield(call.L, -2, "cursor")
                }
                lua_pushnil(call.L)
            } catch let e as ShareFlowError {
                lua_pushnil(call.L)
                push(e)
            }
            return 2
        }
    }

    func defineQuery(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> QueryOperation { o.operation as! QueryOperation }
        cls.property(
            "query",
            get: { lua, o in
                guard let q = op(o).query else { return lua_pushnil(lua.L) }
                lua_createtable(lua.L, 0, 1)
                lua.push(string: q.recordType)
                lua_setfield(lua.L, -2, "recordType")
            },
            set: { [unowned self] call, o, i in
                if call.isNil(i) {
                    op(o).query = nil
                    return
                }
                try call.table(i)
                try call.checkKeys(i, allowed: Bindings.queryKeys)
                op(o).query = try query(call, i, position: i)
            }
        )
        cls.property(
            "cursor",
            get: { [unowned self] _, o in push(cursor: op(o).cursor) },
            set: { [unowned self] call, o, i in
                op(o).cursor = call.isNil(i) ? nil : try call.object(i, QueryCursor.self, typeName: cursorClass.typeName)
            }
        )
        cls.property(
            "zoneID",
            get: { [unowned self] lua, o in
                if let z = op(o).zoneID { push(z) } else { lua_pushnil(lua.L) }
            },
            set: { [unowned self] call, o, i in
                op(o).zoneID =
                    call.isNil(i)
                    ? nil
                    : try zoneID(call, i, position: i, defaultOwner: { throw call.argumentError(i, "zoneID needs ownerName") })
            }
        )
        cls.property(
            "desiredKeys",
            get: { lua, o in lua.push(strings: op(o).desiredKeys ?? []) },
            set: { [unowned self] call, o, i in op(o).desiredKeys = call.isNil(i) ? nil : try stringList(call, i) }
        )
        cls.property(
            "resultsLimit",
            get: { lua, o in
                if let n = op(o).resultsLimit { lua_pushinteger(lua.L, lua_Integer(n)) } else { lua_pushnil(lua.L) }
            },
            set: { call, o, i in
                op(o).resultsLimit = call.isNil(i) ? nil : try call.integer(i, in: 1...Int(Int32.max))
            }
        )
        blockProperty(cls, "recordMatchedBlock") { [unowned self] o, ref in
            op(o).recordMatchedBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "recordMatchedBlock") {
                        push(id)
                        push(result) { push(record: $0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "recordFetchedBlock") { [unowned self] o, ref in
            op(o).recordFetchedBlock = ref.map { ref in
                { [unowned self] record in
                    callback(ref, "recordFetchedBlock") {
                        push(record: record)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "queryResultBlock") { [unowned self] o, ref in
            op(o).queryResultBlock = ref.map { ref in
                { [unowned self] r in
                    callback(ref, "queryResultBlock") {
                        push(cursor: try? r.get())
                        push(r.error)
                        return 2
                    }
                }
            }
        }
        blockProperty(cls, "queryCompletionBlock") { [unowned self] o, ref in
            op(o).queryCompletionBlock = ref.map { ref in
                { [unowned self] cursor, e in
                    callback(ref, "queryCompletionBlock") {
                        push(cursor: cursor)
                        push(e)
                        return 2
                    }
                }
            }
        }
    }
}
