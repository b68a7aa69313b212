import CLua
import Foundation
import ShareFlow

/// `Record` (and the record properties of `Share`): ID, type, dates, fields, parent.
extension Bindings {
    func defineRecord<R: Record>(_ cls: LuaClass<R>) {
        cls
            .property("recordID") { [unowned self] _, r in push(r.recordID) }
            .property("recordName") { lua, r in lua.push(string: r.recordID.recordName) }
            .property("zoneID") { [unowned self] _, r in push(r.recordID.zoneID) }
            .property("recordType") { lua, r in lua.push(string: r.recordType) }
            .property("recordChangeTag") { lua, r in try lua.push(r.recordChangeTag.map { .string($0) } ?? .nil) }
            .property("modificationDate") { lua, r in try lua.push(r.modificationDate.map { .number($0.timeIntervalSince1970) } ?? .nil) }
            .property("creationDate") { lua, r in try lua.push(r.creationDate.map { .number($0.timeIntervalSince1970) } ?? .nil) }
            .property("creatorUserRecordID") { [unowned self] _, r in push(r.creatorUserRecordID) }
            .property("lastModifiedUserRecordID") { [unowned self] _, r in push(r.lastModifiedUserRecordID) }
            .property(
                "fields",
                get: { [unowned self] _, r in
                    // The view may change the record only where the record may be changed.
                    let writable = lua.isWritable(at: 1)
                    fieldsClass.push(RecordFields(record: r), in: lua)
                    if writable { lua.markWritable(at: -1) }
                },
                set: { [unowned self] call, r, i in
                    try call.table(i)
                    r.fields = try fieldTable(call, i)
                    call.state.recharge(at: 1)
                }
            )
            .property(
                "parent",
                get: { [unowned self] _, r in push(r.parent) },
                set: { [unowned self] call, r, i in
                    r.parent = call.isNil(i) ? nil : try recordID(call, i, position: 3)
                }
            )
            .property("share") { [unowned self] _, r in push(r.share) }
            .method("get") { [unowned self] call, r in
                let key = try call.string(2)
                if let v = r.fields[key] { push(v) } else { lua_pushnil(call.L) }
                return 1
            }
            .method("changedKeys") { call, r in
                call.state.push(strings: r.changedKeys())
                return 1
            }
            .method("set", mutating: true) { [unowned self] call, r in
                let key = try call.string(2)
                r.fields[key] = try fieldValue(call, 3, key: key, position: 3)
                call.state.recharge(at: 1)
                return 0
            }
        if R.self == Record.self {
            cls.describe { $0.description }
        }
    }

    /// The table of field values at `i`.
    func fieldTable(_ call: LuaCall, _ i: Int32) throws -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        let abs = lua_absindex(call.L, i)
        call.state.beginCopy()
        lua_pushnil(call.L)
        while lua_next(call.L, abs) != 0 {
            defer { call.state.pop() }
            try call.state.budgetStep()
            guard let key = call.state.string(at: -2), lua_type(call.L, -2) == LUA_TSTRING else {
                throw call.argumentError(i > 0 ? i : 1, "field names must be strings, got \(call.typeName(-2))")
            }
            fields[key] = try fieldValue(call, -1, key: key, position: abs, fresh: false)
        }
        return fields
    }
}
