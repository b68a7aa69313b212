import CLua
import Foundation
import ShareFlow

/// `ModifyRecordsOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineModifyRecords(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> ModifyRecordsOperation { o.operation as! ModifyRecordsOperation }
        cls.property(
            "recordsToSave",
            get: { [unowned self] _, o in pushList(op(o).recordsToSave ?? []) { push(record: $0) } },
            set: { [unowned self] call, o, i in op(o).recordsToSave = call.isNil(i) ? nil : try recordList(call, i) }
        )
        cls.property(
            "recordIDsToDelete",
            get: { [unowned self] _, o in pushList(op(o).recordIDsToDelete ?? []) { push($0) } },
            set: { [unowned self] call, o, i in op(o).recordIDsToDelete = call.isNil(i) ? nil : try recordIDList(call, i) }
        )
        cls.property(
            "savePolicy",
            get: { lua, o in lua.push(string: op(o).savePolicy.rawValue) },
            set: { call, o, i in op(o).savePolicy = try enumValue(call, i, RecordSavePolicy.self, name: "savePolicy") }
        )
        cls.property(
            "isAtomic",
            get: { lua, o in lua_pushboolean(lua.L, op(o).isAtomic ? 1 : 0) },
            set: { call, o, i in
                guard lua_type(call.L, i) == LUA_TBOOLEAN else {
                    throw call.argumentError(i, "boolean expected, got \(call.typeName(i))")
                }
                op(o).isAtomic = lua_toboolean(call.L, i) != 0
            }
        )
        blockProperty(cls, "perRecordSaveBlock") { [unowned self] o, ref in
            op(o).perRecordSaveBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "perRecordSaveBlock") {
                        push(id)
                        push(result) { push(record: $0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "perRecordDeleteBlock") { [unowned self] o, ref in
            op(o).perRecordDeleteBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "perRecordDeleteBlock") {
                        push(id)
                        if case .failure(let e) = result { push(e) } else { lua_pushnil(lua.L) }
                        return 2
                    }
                }
            }
        }
        blockProperty(cls, "modifyRecordsResultBlock") { [unowned self] o, ref in
            op(o).modifyRecordsResultBlock = ref.map { ref in
                { [unowned self] r in
                    callback(ref, "modifyRecordsResultBlock") {
                        push(r.error)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "modifyRecordsCompletionBlock") { [unowned self] o, ref in
            op(o).modifyRecordsCompletionBlock = ref.map { ref in
                { [unowned self] saved, deleted, e in
                    callback(ref, "modifyRecordsCompletionBlock") {
                        pushList(saved ?? []) { push(record: $0) }
                        pushList(deleted ?? []) { push($0) }
                        push(e)
                        return 3
                    }
                }
            }
        }
    }
}
