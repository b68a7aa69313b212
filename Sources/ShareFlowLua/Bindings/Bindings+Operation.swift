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
            // SPEC §15: the callback's own engine calls are requests of their own, not the
            // operation's (whose injected failure would fail them all, a retry included).
            if engine.faults.isArmed {
                try FaultScope.outside { try lua.call(arguments: n, results: 0) }
            } else {
                try lua.call(arguments: n, results: 0)
            }
        } catch {
            host.reportCallbackError(name, error)
        }
        lua.top = base
    }

    /// Pushes a per-item result as Lua's `value, err` pair: `value, nil` or `nil, err`.
    func push<T>(_ result: Result<T, ShareFlowError>, _ pushValue: (T) -> Void) {
        switch result {
        case .success(let v):
            pushValue(v)
            lua_pushnil(lua.L)
        case .failure(let e):
            lua_pushnil(lua.L)
            push(e)
        }
    }

    /// Pushes the Lua value given for the current item, or `fallback()`.
    func pushInput(_ op: LuaOperation, fallback: () -> Void) {
        if let ref = op.nextInput() { lua.pushReference(ref) } else { fallback() }
    }

    /// Every operation the Lua API offers, declared once: its name (`sf.<Name>{…}`), how to
    /// make one, and its fields and blocks. Its class is made and registered when the state
    /// first makes one (`operationClass(named:)`): twelve classes in every plugin's state were
    /// an eighth of a cold start, and most plugins make no operation (issue 48).
    func defineOperations() {
        // Unbound (`Bindings.defineX`): a definition kept until its class is made must not hold
        // the bindings, which would then never be freed, nor the store closed.
        let classes: [(String, () -> CloudOperation, (Bindings) -> (OpClass) -> Void)] = [
            ("FetchShareParticipantsOperation", { FetchShareParticipantsOperation() }, Bindings.defineFetchShareParticipants),
            ("FetchShareMetadataOperation", { FetchShareMetadataOperation() }, Bindings.defineFetchShareMetadata),
            ("AcceptSharesOperation", { AcceptSharesOperation() }, Bindings.defineAcceptShares),
            ("ShareRequestAccessOperation", { ShareRequestAccessOperation() }, Bindings.defineShareRequestAccess),
            ("DiscoverAllUserIdentitiesOperation", { DiscoverAllUserIdentitiesOperation() }, Bindings.defineDiscoverAll),
            ("DiscoverUserIdentitiesOperation", { DiscoverUserIdentitiesOperation() }, Bindings.defineDiscoverUsers),
            ("ModifyRecordsOperation", { ModifyRecordsOperation() }, Bindings.defineModifyRecords),
            ("ModifyRecordZonesOperation", { ModifyRecordZonesOperation() }, Bindings.defineModifyZones),
            ("FetchRecordsOperation", { FetchRecordsOperation() }, Bindings.defineFetchRecords),
            ("QueryOperation", { QueryOperation() }, Bindings.defineQuery),
            ("FetchDatabaseChangesOperation", { FetchDatabaseChangesOperation() }, Bindings.defineFetchDatabaseChanges),
            ("FetchRecordZoneChangesOperation", { FetchRecordZoneChangesOperation() }, Bindings.defineFetchRecordZoneChanges),
        ]
        for (name, make, define) in classes {
            operationDefinitions[name] = define
            operationMakers[name] = make
            operationNames.append(name)
        }
    }

    /// The class of operation `name`, made and registered in this state the first time.
    func operationClass(named name: String) -> OpClass {
        if let made = operationClasses[name] { return made }
        let cls = OpClass(name)
        defineCommon(cls)
        operationDefinitions[name]!(self)(cls)
        cls.register(in: lua)
        operationClasses[name] = cls
        return cls
    }

    /// A new operation of class `name`; `sf.XOperation{…}` then sets its fields (see the prelude).
    func newOperation(name: String) {
        let operation = operationMakers[name]!()
        if let discover = operation as? DiscoverAllUserIdentitiesOperation {
            discover.progressBlock = host.defaultDiscoveryProgress
        }
        operationClass(named: name).push(LuaOperation(operation), in: lua)
    }

    private func defineCommon(_ cls: OpClass) {
        cls
            .property("operationID") { lua, op in lua.push(string: op.operation.operationID) }
            .property(
                "qualityOfService",
                get: { lua, op in lua.push(string: op.operation.qualityOfService.name) },
                set: { call, op, i in
                    let name = try call.string(i)
                    guard let qos = QualityOfService(name: name) else {
                        throw LuaRaise.message(
                            "invalid qualityOfService '\(name)' (expected one of: \(QualityOfService.named.map(\.name).joined(separator: ", ")))"
                        )
                    }
                    op.operation.qualityOfService = qos
                }
            )
            .property("isFinished") { lua, op in try lua.push(.boolean(op.operation.isFinished)) }
            .property("isExecuting") { lua, op in try lua.push(.boolean(op.operation.isExecuting)) }
            .property("isCancelled") { lua, op in try lua.push(.boolean(op.operation.isCancelled)) }
            .property("error") { [unowned self] _, op in push(op.operation.error) }
            .property(
                "database",
                get: { [unowned self] _, op in
                    if let d = op.operation.database { push(database: d) } else { lua_pushnil(lua.L) }
                },
                set: { [unowned self] call, op, i in
                    op.operation.database = call.isNil(i) ? nil : try call.object(i, CloudDatabase.self, typeName: databaseClass.typeName)
                }
            )
            .method("cancel") { _, op in
                op.operation.cancel()
                return 0
            }
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
        cls.property(
            name,
            get: { lua, op in
                if let ref = op.blocks[name] { lua.pushReference(ref) } else { lua_pushnil(lua.L) }
            },
            set: { call, op, i in
                let ref = call.isNil(i) ? nil : try call.function(i)
                op.blocks[name] = ref
                install(op, ref)
            }
        )
    }

    /// A list property of items kept as Lua values, converted by `convert`.
    func itemsProperty(_ cls: OpClass, _ name: String, set: @escaping (LuaCall, LuaOperation, Int32) throws -> Void) {
        cls.property(
            name,
            get: { lua, op in
                if let ref = op.inputValue { lua.pushReference(ref) } else { lua_pushnil(lua.L) }
            },
            set: { call, op, i in
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
            }
        )
    }

    func resultBlocks(
        _ cls: OpClass,
        result: String,
        completion: String,
        set: @escaping (LuaOperation, ((ShareFlowError?) -> Void)?, Bool) -> Void
    ) {
        blockProperty(cls, result) { [unowned self] op, ref in
            set(
                op,
                ref.map { ref in
                    { [unowned self] e in
                        callback(ref, result) {
                            push(e)
                            return 1
                        }
                    }
                },
                true
            )
        }
        blockProperty(cls, completion) { [unowned self] op, ref in
            set(
                op,
                ref.map { ref in
                    { [unowned self] e in
                        callback(ref, completion) {
                            push(e)
                            return 1
                        }
                    }
                },
                false
            )
        }
    }

    func recordList(_ call: LuaCall, _ i: Int32) throws -> [Record] {
        try list(call, i) { n in
            guard let r = record(at: -1) else { throw call.argumentError(i, "item \(n + 1) must be a record, got \(call.typeName(-1))") }
            // A save stamps what it saves: in a plugin, only records it made.
            guard call.state.isWritable(at: -1) else {
                throw call.argumentError(i, "item \(n + 1) is read-only in a plugin: it belongs to the caller")
            }
            return r
        }
    }

    func recordIDList(_ call: LuaCall, _ i: Int32) throws -> [RecordID] {
        try list(call, i) { _ in try recordID(call, -1, position: i) }
    }
}

extension LuaOperation {
    var operationQueued: Bool { operation.isQueued }
}

extension Result where Failure == ShareFlowError {
    var error: ShareFlowError? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
