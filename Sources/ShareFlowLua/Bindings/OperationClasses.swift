import CLua
import Foundation
import ShareFlow

/// An operation as Lua holds it: the Swift operation, the Lua functions set as its blocks, and
/// the Lua values given as its items (so callbacks receive the very values passed in).
final class LuaOperation {
    let operation: CloudOperation
    var blocks: [String: LuaReference] = [:]
    var inputs: [LuaReference] = []
    var inputValue: LuaReference?
    /// Index of the next item the per-item block reports (items are reported in order, O2).
    var cursor = 0
    init(_ operation: CloudOperation) { self.operation = operation }

    func nextInput() -> LuaReference? {
        defer { cursor += 1 }
        return cursor < inputs.count ? inputs[cursor] : nil
    }
}

extension Bindings {
    typealias OpClass = LuaClass<LuaOperation>

    func operation(_ call: LuaCall, _ i: Int32) throws -> LuaOperation {
        guard let op = lua.anyObject(at: i) as? LuaOperation else {
            throw call.argumentError(i, "operation expected, got \(call.typeName(i))")
        }
        return op
    }

    /// Calls a Lua callback; its error is reported (logged with traceback, counted), never
    /// raised into the operation.
    func callback(_ ref: LuaReference, _ name: String, _ pushArgs: () -> Int32) {
        let base = lua.top
        // The function, its arguments (a result pair, an error table being built) and the
        // traceback handler: room first, never a push past the stack's end.
        do { try lua.checkStack(16) } catch { return host.reportCallbackError(name, error) }
        lua.pushReference(ref)
        let n = pushArgs()
        do {
            try lua.call(arguments: n, results: 0)
        } catch {
            host.reportCallbackError(name, error)
        }
        lua.top = base
    }

    /// Pushes a per-item result as Lua's `value, err` pair: `value, nil` or `nil, err`.
    func push<T>(_ result: Result<T, ShareFlowError>, _ pushValue: (T) -> Void) {
        switch result {
        case .success(let v): pushValue(v); lua_pushnil(lua.L)
        case .failure(let e): lua_pushnil(lua.L); push(e)
        }
    }

    /// Pushes the Lua value given for the current item, or `fallback()`.
    func pushInput(_ op: LuaOperation, fallback: () -> Void) {
        if let ref = op.nextInput() { lua.pushReference(ref) } else { fallback() }
    }

    /// Every operation the Lua API offers, declared once: its name (`sf.<Name>{…}`), how to
    /// make one, and its fields and blocks.
    func defineOperations() {
        let classes: [(String, () -> CloudOperation, (OpClass) -> Void)] = [
            ("FetchShareParticipantsOperation", { FetchShareParticipantsOperation() }, defineFetchShareParticipants),
            ("FetchShareMetadataOperation", { FetchShareMetadataOperation() }, defineFetchShareMetadata),
            ("AcceptSharesOperation", { AcceptSharesOperation() }, defineAcceptShares),
            ("DiscoverAllUserIdentitiesOperation", { DiscoverAllUserIdentitiesOperation() }, defineDiscoverAll),
            ("DiscoverUserIdentitiesOperation", { DiscoverUserIdentitiesOperation() }, defineDiscoverUsers),
            ("ModifyRecordsOperation", { ModifyRecordsOperation() }, defineModifyRecords),
            ("ModifyRecordZonesOperation", { ModifyRecordZonesOperation() }, defineModifyZones),
            ("FetchRecordsOperation", { FetchRecordsOperation() }, defineFetchRecords),
            ("QueryOperation", { QueryOperation() }, defineQuery),
        ]
        for (name, make, define) in classes {
            let cls = OpClass(name)
            defineCommon(cls)
            define(cls)
            cls.register(in: lua)
            operationClasses[name] = cls
            operationMakers[name] = make
            operationNames.append(name)
        }
    }

    /// A new operation of class `name`; `sf.XOperation{…}` then sets its fields (see the prelude).
    func newOperation(name: String) {
        let operation = operationMakers[name]!()
        if let discover = operation as? DiscoverAllUserIdentitiesOperation {
            discover.progressBlock = host.defaultDiscoveryProgress
        }
        operationClasses[name]!.push(LuaOperation(operation), in: lua)
    }

    private func defineCommon(_ cls: OpClass) {
        cls
            .property("operationID") { lua, op in lua.push(string: op.operation.operationID) }
            .property("qualityOfService", get: { lua, op in lua.push(string: op.operation.qualityOfService.name) },
                      set: { call, op, i in
                          let name = try call.string(i)
                          guard let qos = QualityOfService(name: name) else {
                              throw LuaRaise.message("invalid qualityOfService '\(name)' (expected one of: \(QualityOfService.named.map(\.name).joined(separator: ", ")))")
                          }
                          op.operation.qualityOfService = qos
                      })
            .property("isFinished") { lua, op in try lua.push(.boolean(op.operation.isFinished)) }
            .property("isExecuting") { lua, op in try lua.push(.boolean(op.operation.isExecuting)) }
            .property("isCancelled") { lua, op in try lua.push(.boolean(op.operation.isCancelled)) }
            .property("error") { [unowned self] _, op in push(op.operation.error) }
            .property("database", get: { [unowned self] _, op in
                if let d = op.operation.database { push(database: d) } else { lua_pushnil(lua.L) }
            }, set: { [unowned self] call, op, i in
                op.operation.database = call.isNil(i) ? nil : try call.object(i, CloudDatabase.self, typeName: databaseClass.typeName)
            })
            .method("cancel") { _, op in op.operation.cancel(); return 0 }
            .method("wait") { [unowned self] call, op in
                guard op.operation.isFinished || op.operationQueued else {
                    throw LuaRaise.message("\(op.operation.typeName):wait(): add the operation to a container first (container:add(op))")
                }
                op.operation.waitUntilFinished()
                push(op.operation.error)
                return 1
            }
            .describe { $0.operation.description }
        blockProperty(cls, "completionBlock") { [unowned self] op, ref in
            op.operation.completionBlock = ref.map { ref in { [unowned self] in callback(ref, "completionBlock") { 0 } } }
        }
    }

    /// A block property: reading gives the Lua function, writing installs it on the operation.
    func blockProperty(_ cls: OpClass, _ name: String, install: @escaping (LuaOperation, LuaReference?) -> Void) {
        cls.property(name, get: { lua, op in
            if let ref = op.blocks[name] { lua.pushReference(ref) } else { lua_pushnil(lua.L) }
        }, set: { call, op, i in
            let ref = call.isNil(i) ? nil : try call.function(i)
            op.blocks[name] = ref
            install(op, ref)
        })
    }

    /// A list property of items kept as Lua values, converted by `convert`.
    func itemsProperty(_ cls: OpClass, _ name: String, set: @escaping (LuaCall, LuaOperation, Int32) throws -> Void) {
        cls.property(name, get: { lua, op in
            if let ref = op.inputValue { lua.pushReference(ref) } else { lua_pushnil(lua.L) }
        }, set: { call, op, i in
            if call.isNil(i) {
                op.inputValue = nil
                op.inputs = []
            } else {
                try call.table(i)
                op.inputValue = call.state.reference(at: i)
                op.inputs = try (0..<call.listLength(i)).map { n in
                    try call.element(i, n + 1)
                    defer { call.state.pop() }
                    return call.state.reference(at: -1)
                }
            }
            try set(call, op, i)
        })
    }

    private func resultBlocks(_ cls: OpClass, result: String, completion: String,
                              set: @escaping (LuaOperation, ((ShareFlowError?) -> Void)?, Bool) -> Void) {
        blockProperty(cls, result) { [unowned self] op, ref in
            set(op, ref.map { ref in { [unowned self] e in callback(ref, result) { push(e); return 1 } } }, true)
        }
        blockProperty(cls, completion) { [unowned self] op, ref in
            set(op, ref.map { ref in { [unowned self] e in callback(ref, completion) { push(e); return 1 } } }, false)
        }
    }

    private func defineFetchShareParticipants(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchShareParticipantsOperation { o.operation as! FetchShareParticipantsOperation }
        itemsProperty(cls, "userIdentityLookupInfos") { [unowned self] call, o, i in
            op(o).userIdentityLookupInfos = call.isNil(i) ? nil : try lookupRequests(call, i)
        }
        blockProperty(cls, "perShareParticipantResultBlock") { [unowned self] o, ref in
            // Weak: the block is stored on the operation `o` holds; a strong `o` would be a cycle.
            op(o).perShareParticipantResultBlock = ref.map { ref in { [unowned self, weak o] request, result in
                callback(ref, "perShareParticipantResultBlock") {
                    if let o { pushInput(o) { push(request.info) } } else { push(request.info) }
                    push(result) { push(participant: $0) }
                    return 3
                }
            } }
            if ref == nil { op(o).perShareParticipantResultBlock = nil }
        }
        blockProperty(cls, "shareParticipantFetchedBlock") { [unowned self] o, ref in
            op(o).shareParticipantFetchedBlock = ref.map { ref in { [unowned self] p in
                callback(ref, "shareParticipantFetchedBlock") { push(participant: p); return 1 }
            } }
        }
        resultBlocks(cls, result: "fetchShareParticipantsResultBlock", completion: "fetchShareParticipantsCompletionBlock") { o, f, isResult in
            if isResult { op(o).fetchShareParticipantsResultBlock = f.map { f in { f($0.error) } } }
            else { op(o).fetchShareParticipantsCompletionBlock = f }
        }
    }

    private func defineFetchShareMetadata(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchShareMetadataOperation { o.operation as! FetchShareMetadataOperation }
        itemsProperty(cls, "shareURLs") { [unowned self] call, o, i in
            op(o).shareURLs = call.isNil(i) ? nil : try stringList(call, i)
        }
        cls.property("shouldFetchRootRecord", get: { lua, o in try lua.push(.boolean(op(o).shouldFetchRootRecord)) },
                     set: { call, o, i in op(o).shouldFetchRootRecord = try call.boolean(i) })
        cls.property("rootRecordDesiredKeys", get: { lua, o in
            try lua.push(op(o).rootRecordDesiredKeys.map { .table(LuaTable(array: $0.map { .string($0) })) } ?? .nil)
        }, set: { [unowned self] call, o, i in op(o).rootRecordDesiredKeys = call.isNil(i) ? nil : try stringList(call, i) })
        blockProperty(cls, "perShareMetadataResultBlock") { [unowned self] o, ref in
            op(o).perShareMetadataResultBlock = ref.map { ref in { [unowned self] url, result in
                callback(ref, "perShareMetadataResultBlock") {
                    lua.push(string: url)
                    push(result) { push(metadata: $0) }
                    return 3
                }
            } }
        }
        blockProperty(cls, "perShareMetadataBlock") { [unowned self] o, ref in
            op(o).perShareMetadataBlock = ref.map { ref in { [unowned self] url, m, e in
                callback(ref, "perShareMetadataBlock") { lua.push(string: url); push(metadata: m); push(e); return 3 }
            } }
        }
        resultBlocks(cls, result: "fetchShareMetadataResultBlock", completion: "fetchShareMetadataCompletionBlock") { o, f, isResult in
            if isResult { op(o).fetchShareMetadataResultBlock = f.map { f in { f($0.error) } } }
            else { op(o).fetchShareMetadataCompletionBlock = f }
        }
    }

    private func defineAcceptShares(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> AcceptSharesOperation { o.operation as! AcceptSharesOperation }
        itemsProperty(cls, "shareMetadatas") { [unowned self] call, o, i in
            op(o).shareMetadatas = call.isNil(i) ? nil : try metadataList(call, i)
        }
        blockProperty(cls, "perShareResultBlock") { [unowned self] o, ref in
            op(o).perShareResultBlock = ref.map { ref in { [unowned self] m, result in
                callback(ref, "perShareResultBlock") {
                    push(metadata: m)
                    push(result) { push(record: $0) }
                    return 3
                }
            } }
        }
        blockProperty(cls, "perShareCompletionBlock") { [unowned self] o, ref in
            op(o).perShareCompletionBlock = ref.map { ref in { [unowned self] m, s, e in
                callback(ref, "perShareCompletionBlock") { push(metadata: m); push(record: s); push(e); return 3 }
            } }
        }
        resultBlocks(cls, result: "acceptSharesResultBlock", completion: "acceptSharesCompletionBlock") { o, f, isResult in
            if isResult { op(o).acceptSharesResultBlock = f.map { f in { f($0.error) } } }
            else { op(o).acceptSharesCompletionBlock = f }
        }
    }

    private func defineDiscoverAll(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> DiscoverAllUserIdentitiesOperation { o.operation as! DiscoverAllUserIdentitiesOperation }
        blockProperty(cls, "userIdentityDiscoveredBlock") { [unowned self] o, ref in
            op(o).userIdentityDiscoveredBlock = ref.map { ref in { [unowned self] identity in
                callback(ref, "userIdentityDiscoveredBlock") { push(identity); return 1 }
            } }
        }
        blockProperty(cls, "progressBlock") { [unowned self] o, ref in
            op(o).progressBlock = ref.map { ref in { [unowned self] done, total in
                callback(ref, "progressBlock") {
                    lua_pushinteger(lua.L, lua_Integer(done)); lua_pushinteger(lua.L, lua_Integer(total)); return 2
                }
            } }
        }
        resultBlocks(cls, result: "discoverAllUserIdentitiesResultBlock", completion: "discoverAllUserIdentitiesCompletionBlock") { o, f, isResult in
            if isResult { op(o).discoverAllUserIdentitiesResultBlock = f.map { f in { f($0.error) } } }
            else { op(o).discoverAllUserIdentitiesCompletionBlock = f }
        }
    }

    private func defineDiscoverUsers(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> DiscoverUserIdentitiesOperation { o.operation as! DiscoverUserIdentitiesOperation }
        itemsProperty(cls, "userIdentityLookupInfos") { [unowned self] call, o, i in
            op(o).userIdentityLookupInfos = call.isNil(i) ? nil : try lookupRequests(call, i)
        }
        blockProperty(cls, "userIdentityDiscoveredBlock") { [unowned self] o, ref in
            op(o).userIdentityDiscoveredBlock = ref.map { ref in { [unowned self] identity, request in
                callback(ref, "userIdentityDiscoveredBlock") { push(identity); push(request.info); return 2 }
            } }
        }
        resultBlocks(cls, result: "discoverUserIdentitiesResultBlock", completion: "discoverUserIdentitiesCompletionBlock") { o, f, isResult in
            if isResult { op(o).discoverUserIdentitiesResultBlock = f.map { f in { f($0.error) } } }
            else { op(o).discoverUserIdentitiesCompletionBlock = f }
        }
    }

    private func recordList(_ call: LuaCall, _ i: Int32) throws -> [Record] {
        try list(call, i) { n in
            guard let r = record(at: -1) else { throw call.argumentError(i, "item \(n + 1) must be a record, got \(call.typeName(-1))") }
            // A save stamps what it saves: in a plugin, only records it made.
            guard call.state.isWritable(at: -1) else {
                throw call.argumentError(i, "item \(n + 1) is read-only in a plugin: it belongs to the caller")
            }
            return r
        }
    }

    private func recordIDList(_ call: LuaCall, _ i: Int32) throws -> [RecordID] {
        try list(call, i) { _ in try recordID(call, -1, position: i) }
    }

    private func defineModifyRecords(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> ModifyRecordsOperation { o.operation as! ModifyRecordsOperation }
        cls.property("recordsToSave", get: { [unowned self] _, o in pushList(op(o).recordsToSave ?? []) { push(record: $0) } },
                     set: { [unowned self] call, o, i in op(o).recordsToSave = call.isNil(i) ? nil : try recordList(call, i) })
        cls.property("recordIDsToDelete", get: { [unowned self] _, o in pushList(op(o).recordIDsToDelete ?? []) { push($0) } },
                     set: { [unowned self] call, o, i in op(o).recordIDsToDelete = call.isNil(i) ? nil : try recordIDList(call, i) })
        cls.property("savePolicy", get: { lua, o in lua.push(string: op(o).savePolicy.rawValue) },
                     set: { call, o, i in op(o).savePolicy = try enumValue(call, i, RecordSavePolicy.self, name: "savePolicy") })
        cls.property("isAtomic", get: { lua, o in lua_pushboolean(lua.L, op(o).isAtomic ? 1 : 0) },
                     set: { call, o, i in
                         guard lua_type(call.L, i) == LUA_TBOOLEAN else {
                             throw call.argumentError(i, "boolean expected, got \(call.typeName(i))")
                         }
                         op(o).isAtomic = lua_toboolean(call.L, i) != 0
                     })
        blockProperty(cls, "perRecordSaveBlock") { [unowned self] o, ref in
            op(o).perRecordSaveBlock = ref.map { ref in { [unowned self] id, result in
                callback(ref, "perRecordSaveBlock") {
                    push(id)
                    push(result) { push(record: $0) }
                    return 3
                }
            } }
        }
        blockProperty(cls, "perRecordDeleteBlock") { [unowned self] o, ref in
            op(o).perRecordDeleteBlock = ref.map { ref in { [unowned self] id, result in
                callback(ref, "perRecordDeleteBlock") {
                    push(id)
                    if case .failure(let e) = result { push(e) } else { lua_pushnil(lua.L) }
                    return 2
                }
            } }
        }
        blockProperty(cls, "modifyRecordsResultBlock") { [unowned self] o, ref in
            op(o).modifyRecordsResultBlock = ref.map { ref in { [unowned self] r in
                callback(ref, "modifyRecordsResultBlock") { push(r.error); return 1 }
            } }
        }
        blockProperty(cls, "modifyRecordsCompletionBlock") { [unowned self] o, ref in
            op(o).modifyRecordsCompletionBlock = ref.map { ref in { [unowned self] saved, deleted, e in
                callback(ref, "modifyRecordsCompletionBlock") {
                    pushList(saved ?? []) { push(record: $0) }
                    pushList(deleted ?? []) { push($0) }
                    push(e)
                    return 3
                }
            } }
        }
    }

    private func defineModifyZones(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> ModifyRecordZonesOperation { o.operation as! ModifyRecordZonesOperation }
        cls.property("recordZonesToSave", get: { lua, o in
            lua.push(strings: (op(o).recordZonesToSave ?? []))
        }, set: { [unowned self] call, o, i in
            guard !call.isNil(i) else { op(o).recordZonesToSave = nil; return }
            try call.table(i)
            op(o).recordZonesToSave = try (0..<call.listLength(i)).map { n in
                try call.element(i, n + 1)
                defer { call.state.pop() }
                if let s = call.state.string(at: -1) { return s }
                return try zoneID(call, -1, position: i, defaultOwner: { "" }).zoneName
            }
        })
        cls.property("recordZoneIDsToDelete", get: { [unowned self] _, o in pushList(op(o).recordZoneIDsToDelete ?? []) { push($0) } },
                     set: { [unowned self] call, o, i in
                         guard !call.isNil(i) else { op(o).recordZoneIDsToDelete = nil; return }
                         try call.table(i)
                         let owner = { () throws -> String in
                             guard let d = op(o).database else { throw LuaRaise.message("set op.database before zone names, or pass zone IDs") }
                             return try d.container.session.account.userRecordID
                         }
                         op(o).recordZoneIDsToDelete = try (0..<call.listLength(i)).map { n in
                             try call.element(i, n + 1)
                             defer { call.state.pop() }
                             return try zoneID(call, -1, position: i, defaultOwner: owner)
                         }
                     })
        blockProperty(cls, "perRecordZoneSaveBlock") { [unowned self] o, ref in
            op(o).perRecordZoneSaveBlock = ref.map { ref in { [unowned self] name, result in
                callback(ref, "perRecordZoneSaveBlock") {
                    lua.push(string: name)
                    push(result) { push($0) }
                    return 3
                }
            } }
        }
        blockProperty(cls, "perRecordZoneDeleteBlock") { [unowned self] o, ref in
            op(o).perRecordZoneDeleteBlock = ref.map { ref in { [unowned self] id, result in
                callback(ref, "perRecordZoneDeleteBlock") {
                    push(id)
                    if case .failure(let e) = result { push(e) } else { lua_pushnil(lua.L) }
                    return 2
                }
            } }
        }
        blockProperty(cls, "modifyRecordZonesResultBlock") { [unowned self] o, ref in
            op(o).modifyRecordZonesResultBlock = ref.map { ref in { [unowned self] r in
                callback(ref, "modifyRecordZonesResultBlock") { push(r.error); return 1 }
            } }
        }
        blockProperty(cls, "modifyRecordZonesCompletionBlock") { [unowned self] o, ref in
            op(o).modifyRecordZonesCompletionBlock = ref.map { ref in { [unowned self] saved, deleted, e in
                callback(ref, "modifyRecordZonesCompletionBlock") {
                    pushList(saved ?? []) { push($0) }
                    pushList(deleted ?? []) { push($0) }
                    push(e)
                    return 3
                }
            } }
        }
    }

    private func defineFetchRecords(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchRecordsOperation { o.operation as! FetchRecordsOperation }
        cls.property("recordIDs", get: { [unowned self] _, o in pushList(op(o).recordIDs ?? []) { push($0) } },
                     set: { [unowned self] call, o, i in op(o).recordIDs = call.isNil(i) ? nil : try recordIDList(call, i) })
        cls.property("desiredKeys", get: { lua, o in
            try lua.push(op(o).desiredKeys.map { .table(LuaTable(array: $0.map { .string($0) })) } ?? .nil)
        }, set: { [unowned self] call, o, i in op(o).desiredKeys = call.isNil(i) ? nil : try stringList(call, i) })
        blockProperty(cls, "perRecordResultBlock") { [unowned self] o, ref in
            op(o).perRecordResultBlock = ref.map { ref in { [unowned self] id, result in
                callback(ref, "perRecordResultBlock") {
                    push(id)
                    push(result) { push(record: $0) }
                    return 3
                }
            } }
        }
        blockProperty(cls, "fetchRecordsResultBlock") { [unowned self] o, ref in
            op(o).fetchRecordsResultBlock = ref.map { ref in { [unowned self] r in
                callback(ref, "fetchRecordsResultBlock") { push(r.error); return 1 }
            } }
        }
        blockProperty(cls, "fetchRecordsCompletionBlock") { [unowned self] o, ref in
            op(o).fetchRecordsCompletionBlock = ref.map { ref in { [unowned self] records, e in
                callback(ref, "fetchRecordsCompletionBlock") {
                    lua_createtable(lua.L, 0, Int32(records?.count ?? 0))
                    for (id, r) in records ?? [:] {
                        push(record: r)
                        lua_setfield(lua.L, -2, id.recordName)
                    }
                    push(e)
                    return 2
                }
            } }
        }
    }
}

extension LuaOperation {
    var operationQueued: Bool { operation.isQueued }
}

extension Result where Failure == ShareFlowError {
    var error: ShareFlowError? { if case .failure(let e) = self { return e }; return nil }
}
