import CLua
import Foundation
import ShareFlow

/// `FetchRecordsOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineFetchRecords(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchRecordsOperation { o.operation as! FetchRecordsOperation }
        cls.property(
            "recordIDs",
            get: { [unowned self] _, o in pushList(op(o).recordIDs ?? []) { push($0) } },
            set: { [unowned self] call, o, i in op(o).recordIDs = call.isNil(i) ? nil : try recordIDList(call, i) }
        )
        cls.property(
            "desiredKeys",
            get: { lua, o in
                try lua.push(op(o).desiredKeys.map { .table(LuaTable(array: $0.map { .string($0) })) } ?? .nil)
            },
            set: { [unowned self] call, o, i in op(o).desiredKeys = call.isNil(i) ? nil : try stringList(call, i) }
        )
        blockProperty(cls, "perRecordResultBlock") { [unowned self] o, ref in
            op(o).perRecordResultBlock = ref.map { ref in
                { [unowned self] id, result in
                    callback(ref, "perRecordResultBlock") {
                        push(id)
                        push(result) { push(record: $0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "fetchRecordsResultBlock") { [unowned self] o, ref in
            op(o).fetchRecordsResultBlock = ref.map { ref in
                { [unowned self] r in
                    callback(ref, "fetchRecordsResultBlock") {
                        push(r.error)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "fetchRecordsCompletionBlock") { [unowned self] o, ref in
            op(o).fetchRecordsCompletionBlock = ref.map { ref in
                { [unowned self] records, e in
                    callback(ref, "fetchRecordsCompletionBlock") {
                        lua_createtable(lua.L, 0, Int32(records?.count ?? 0))
                        for (id, r) in records ?? [:] {
                            push(record: r)
                            lua_setfield(lua.L, -2, id.recordName)
                        }
                        push(e)
                        return 2
                    }
                }
            }
        }
    }
}
