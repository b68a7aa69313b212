import CLua
import Foundation
import ShareFlow

/// `FetchDatabaseChangesOperation` and `FetchRecordZoneChangesOperation` (O9, O10): their
/// fields and blocks, Apple's current and older names, callbacks as §5's `(item, value, err)`.
extension Bindings {
    /// The last page's `{ serverChangeToken =, moreComing = }`: the database's and a zone's
    /// result blocks hand Lua the same table.
    private func pushPageEnd(serverChangeToken: String, moreComing: Bool) {
        lua_createtable(lua.L, 0, 2)
        lua.push(string: serverChangeToken)
        lua_setfield(lua.L, -2, "serverChangeToken")
        lua_pushboolean(lua.L, moreComing ? 1 : 0)
        lua_setfield(lua.L, -2, "moreComing")
    }

    /// A change token, or nil where there is none yet (a feed read from its start).
    private func pushToken(_ token: String?) {
        if let token { lua.push(string: token) } else { lua_pushnil(lua.L) }
    }

    func defineFetchDatabaseChanges(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchDatabaseChangesOperation { o.operation as! FetchDatabaseChangesOperation }
        cls.property(
            "previousServerChangeToken",
            get: { [unowned self] _, o in pushToken(op(o).previousServerChangeToken) },
            set: { call, o, i in op(o).previousServerChangeToken = call.isNil(i) ? nil : try call.string(i) }
        )
        cls.property(
            "resultsLimit",
            get: { lua, o in
                if let n = op(o).resultsLimit { lua_pushinteger(lua.L, lua_Integer(n)) } else { lua_pushnil(lua.L) }
            },
            set: { call, o, i in op(o).resultsLimit = call.isNil(i) ? nil : try call.integer(i, in: 1...Engine.feedResultsLimitMaximum) }
        )
        cls.property(
            "fetchAllChanges",
            get: { lua, o in lua_pushboolean(lua.L, op(o).fetchAllChanges ? 1 : 0) },
            set: { call, o, i in op(o).fetchAllChanges = try call.boolean(i) }
        )
        for (name, set) in [
            (
                "recordZoneWithIDChangedBlock",
                { (o: FetchDatabaseChangesOperation, b: ((RecordZoneID) -> Void)?) in o.recordZoneWithIDChangedBlock = b }
            ),
            ("recordZoneWithIDWasDeletedBlock", { o, b in o.recordZoneWithIDWasDeletedBlock = b }),
            ("recordZoneWithIDWasPurgedBlock", { o, b in o.recordZoneWithIDWasPurgedBlock = b }),
        ] {
            blockProperty(cls, name) { [unowned self] o, ref in
                set(
                    op(o),
                    ref.map { ref in
                        { [unowned self] zoneID in
                            callback(ref, name) {
                                push(zoneID)
                                return 1
                            }
                        }
                    }
                )
            }
        }
        blockProperty(cls, "changeTokenUpdatedBlock") { [unowned self] o, ref in
            op(o).changeTokenUpdatedBlock = ref.map { ref in
                { [unowned self] token in
                    callback(ref, "changeTokenUpdatedBlock") {
                        lua.push(string: token)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "fetchDatabaseChangesResultBlock") { [unowned self] o, ref in
            op(o).fetchDatabaseChangesResultBlock = ref.map { ref in
                { [unowned self] result in
                    callback(ref, "fetchDatabaseChangesResultBlock") {
                        push(result) { pushPageEnd(serverChangeToken: $0.serverChangeToken, moreComing: $0.moreComing) }
                        return 2
                    }
                }
            }
        }
        blockProperty(cls, "fetchDatabaseChangesCompletionBlock") { [unowned self] o, ref in
            op(o).fetchDatabaseChangesCompletionBlock = ref.map { ref in
                { [unowned self] token, moreComing, e in
                    callback(ref, "fetchDatabaseChangesCompletionBlock") {
                        pushToken(token)
                        lua_pushboolean(lua.L, moreComing ? 1 : 0)
                        push(e)
                        return 3
                    }
                }
            }
        }
    }

    func defineFetchRecordZoneChanges(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchRecordZoneChangesOperation { o.operation as! FetchRecordZoneChangesOperation }
        func owner(_ o: LuaOperation) throws -> String {
            guard let d = o.operation.database else { throw LuaRaise.message("set op.database before zone names, or pass zone IDs") }
            return try d.container.session.account.userRecordID
        }
        cls.property(
            "recordZoneIDs",
            get: { [unowned self] _, o in pushList(op(o).recordZoneIDs ?? []) { push($0) } },
            set: { [unowned self] call, o, i in
                guard !call.isNil(i) else {
                    op(o).recordZoneIDs = nil
                    return
                }
                try call.table(i)
                op(o).recordZoneIDs = try (0..<call.listLength(i)).map { n in
                    try call.element(i, n + 1)
                    defer { call.state.pop() }
                    return try zoneID(call, -1, position: i, defaultOwner: { try owner(o) })
                }
            }
        )
        // A list of { zoneID =, previousServerChangeToken =, resultsLimit =, desiredKeys = }, or a
        // table keyed by zone IDs whose values hold the rest.
        cls.property(
            "configurationsByRecordZoneID",
            get: { [unowned self] lua, o in
                let configurations = (op(o).configurationsByRecordZoneID ?? [:]).sorted { $0.key.description < $1.key.description }
                pushList(configurations) { zoneID, c in
                    lua_createtable(lua.L, 0, 4)
                    push(zoneID)
                    lua_setfield(lua.L, -2, "zoneID")
                    lua.setField("previousServerChangeToken", string: c.previousServerChangeToken)
                    lua.setField("resultsLimit", integer: c.resultsLimit)
                    if let k = c.desiredKeys {
                        lua.push(strings: k)
                        lua_setfield(lua.L, -2, "desiredKeys")
                    }
                }
            },
            set: { [unowned self] call, o, i in
                guard !call.isNil(i) else {
                    op(o).configurationsByRecordZoneID = nil
                    return
                }
                try call.table(i)
                let t = lua_absindex(call.L, i)
                var configurations: [RecordZoneID: FetchRecordZoneChangesOperation.ZoneConfiguration] = [:]
                // The configuration table at `c`, for `zoneID` (or its own zoneID field when nil).
                func read(_ c: Int32, zoneID given: RecordZoneID?) throws {
                    let c = lua_absindex(call.L, c)
                    guard lua_type(call.L, c) == LUA_TTABLE else {
                        throw call.argumentError(
                            i,
                            "each configuration must be a table { zoneID =, previousServerChangeToken =, resultsLimit =, desiredKeys = }, got \(call.typeName(c))"
                        )
                    }
                    try call.checkKeys(c, allowed: ["zoneID", "previousServerChangeToken", "resultsLimit", "desiredKeys"])
                    var zone = given
                    if zone == nil {
                        guard call.field(c, "zoneID") != LUA_TNIL else { throw call.argumentError(i, "a configuration needs zoneID") }
                        zone = try zoneID(call, -1, position: i, defaultOwner: { try owner(o) })
                        call.state.pop()
                    }
                    var configuration = FetchRecordZoneChangesOperation.ZoneConfiguration()
                    switch call.field(c, "previousServerChangeToken") {
                    case LUA_TNIL: break
                    case LUA_TSTRING: configuration.previousServerChangeToken = call.state.string(at: -1)
                    default: throw call.argumentError(i, "previousServerChangeToken must be a change token (a string), got \(call.typeName(-1))")
                    }
                    call.state.pop()
                    configuration.resultsLimit = try call.integerField(c, "resultsLimit", in: 1...Engine.feedResultsLimitMaximum)
                    if call.field(c, "desiredKeys") != LUA_TNIL { configuration.desiredKeys = try stringList(call, -1) }
                    call.state.pop()
                    configurations[zone!] = configuration
                }
                let listed = try call.listLength(t)
                if listed > 0 {
                    for n in 0..<listed {
                        try call.element(t, n + 1)
                        defer { call.state.pop() }
                        try read(-1, zoneID: nil)
                    }
                } else {
                    // Keyed by zone IDs: raw traversal, the budget checked per entry, at most a list's worth.
                    lua_pushnil(call.L)
                    var count = 0
                    while lua_next(call.L, t) != 0 {
                        try call.state.budgetStep()
                        count += 1
                        guard count <= LuaCall.maxListItems || call.state.limits.pointee.budget_ns == 0 else {
                            throw call.argumentError(i, "at most \(LuaCall.maxListItems) configurations expected")
                        }
                        let zone = try zoneID(call, -2, position: i, defaultOwner: { try owner(o) })
                        try read(-1, zoneID: zone)
                        call.state.pop()
                    }
                }
                op(o).configurationsByRecordZoneID = configurations
            }
        )
        cls.property(
            "fetchAllChanges",
            get: { lua, o in lua_pushboolean(lua.L, op(o).fetchAllChanges ? 1 : 0) },
            set: { call, o, i in op(o).fetchAllChanges = try call.boolean(i) }
        )
        blockProperty(cls, "recordWasChangedBlock") { [unowned self] o, ref in
            op(o).recordWasChangedBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "recordWasChangedBlock") {
                        push(id)
                        push(result) {
                            push(record: $0)
                            lua.markWritable(at: -1)
                        }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "recordChangedBlock") { [unowned self] o, ref in
            op(o).recordChangedBlock = ref.map { ref in
                { [unowned self] record in
                    callback(ref, "recordChangedBlock") {
                        push(record: record)
                        lua.markWritable(at: -1)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "recordWithIDWasDeletedBlock") { [unowned self] o, ref in
            op(o).recordWithIDWasDeletedBlock = ref.map { ref in
                { [unowned self] id, type in
                    callback(ref, "recordWithIDWasDeletedBlock") {
                        push(id)
                        lua.push(string: type)
                        return 2
                    }
                }
            }
        }
        blockProperty(cls, "recordZoneChangeTokensUpdatedBlock") { [unowned self] o, ref in
            op(o).recordZoneChangeTokensUpdatedBlock = ref.map { ref in
                { [unowned self] zoneID, token, _ in
                    callback(ref, "recordZoneChangeTokensUpdatedBlock") {
                        push(zoneID)
                        pushToken(token)
                        lua_pushnil(lua.L)
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "recordZoneFetchResultBlock") { [unowned self] o, ref in
            op(o).recordZoneFetchResultBlock = ref.map { ref in
                { [unowned self] zoneID, result in
                    callback(ref, "recordZoneFetchResultBlock") {
                        push(zoneID)
                        push(result) { pushPageEnd(serverChangeToken: $0.serverChangeToken, moreComing: $0.moreComing) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "recordZoneFetchCompletionBlock") { [unowned self] o, ref in
            op(o).recordZoneFetchCompletionBlock = ref.map { ref in
                { [unowned self] zoneID, token, _, moreComing, e in
                    callback(ref, "recordZoneFetchCompletionBlock") {
                        push(zoneID)
                        pushToken(token)
                        lua_pushnil(lua.L)
                        lua_pushboolean(lua.L, moreComing ? 1 : 0)
                        push(e)
                        return 5
                    }
                }
            }
        }
        blockProperty(cls, "fetchRecordZoneChangesResultBlock") { [unowned self] o, ref in
            op(o).fetchRecordZoneChangesResultBlock = ref.map { ref in
                { [unowned self] r in
                    callback(ref, "fetchRecordZoneChangesResultBlock") {
                        push(r.error)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "fetchRecordZoneChangesCompletionBlock") { [unowned self] o, ref in
            op(o).fetchRecordZoneChangesCompletionBlock = ref.map { ref in
                { [unowned self] e in
                    callback(ref, "fetchRecordZoneChangesCompletionBlock") {
                        push(e)
                        return 1
                    }
                }
            }
        }
    }
}
