import CLua
import Foundation
import ShareFlow

/// `ModifyRecordZonesOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineModifyZones(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> ModifyRecordZonesOperation { o.operation as! ModifyRecordZonesOperation }
        cls.property(
            "recordZonesToSave",
            get: { lua, o in
                lua.push(strings: (op(o).recordZonesToSave ?? []))
            },
            set: { [unowned self] call, o, i in
                guard !call.isNil(i) else {
                    op(o).recordZonesToSave = nil
                    return
                }
                try call.table(i)
                op(o).recordZonesToSave = try (0..<call.listLength(i)).map { n in
                    try call.element(i, n + 1)
                    defer { call.state.pop() }
                    if let s = call.state.string(at: -1) { return s }
                    return try zoneID(call, -1, position: i, defaultOwner: { "" }).zoneName
                }
            }
        )
        cls.property(
            "recordZoneIDsToDelete",
            get: { [unowned self] _, o in pushList(op(o).recordZoneIDsToDelete ?? []) { push($0) } },
            set: { [unowned self] call, o, i in
                guard !call.isNil(i) else {
                    op(o).recordZoneIDsToDelete = nil
                    return
                }
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
            }
        )
        blockProperty(cls, "perRecordZoneSaveBlock") { [unowned self] o, ref in
            op(o).perRecordZoneSaveBlock = ref.map { ref in
                { [unowned self] name, result in
                    callback(ref, "perRecordZoneSaveBlock") {
                        lua.push(string: name)
                        push(result) { push($0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "perRecordZoneDeleteBlock") { [unowned self] o, ref in
            op(o).perRecordZoneDeleteBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "perRecordZoneDeleteBlock") {
                        push(id)
                        if case .failure(let e) = result { push(e) } else { lua_pushnil(lua.L) }
                        return 2
                    }
                }
            }
        }
        blockProperty(cls, "modifyRecordZonesResultBlock") { [unowned self] o, ref in
            op(o).modifyRecordZonesResultBlock = ref.map { ref in
                { [unowned self] r in
                    callback(ref, "modifyRecordZonesResultBlock") {
                        push(r.error)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "modifyRecordZonesCompletionBlock") { [unowned self] o, ref in
            op(o).modifyRecordZonesCompletionBlock = ref.map { ref in
                { [unowned self] saved, deleted, e in
                    callback(ref, "modifyRecordZonesCompletionBlock") {
                        pushList(saved ?? []) { push($0) }
                        pushList(deleted ?? []) { push($0) }
                        push(e)
                        return 3
                    }
                }
            }
        }
    }
}
