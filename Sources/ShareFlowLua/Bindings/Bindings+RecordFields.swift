import CLua
import Foundation
import ShareFlow

/// The fields of a record, as a read/write table view.
final class RecordFields {
    let record: Record
    init(record: Record) { self.record = record }
}

/// `RecordFields`: `record.fields`, a table-like view that reads and writes the record's
/// field values (R23).
extension Bindings {
    func defineFields() {
        fieldsClass
            .metamethod("__index") { [unowned self] call in
                let view = try call.object(1, RecordFields.self, typeName: "RecordFields")
                let key = try call.string(2)
                if let v = view.record.fields[key] { push(v) } else { lua_pushnil(call.L) }
                return 1
            }
            .metamethod("__newindex") { [unowned self] call in
                let view = try call.object(1, RecordFields.self, typeName: "RecordFields")
                guard call.state.isWritable(at: 1) else {
                    throw LuaRaise.message(call.position + "Record is read-only in a plugin: it belongs to the caller")
                }
                let key = try call.string(2)
                view.record.fields[key] = try fieldValue(call, 3, key: key, position: 3)
                call.state.recharge(at: 1)
                return 0
            }
            .metamethod("__pairs") { [unowned self] call in
                let view = try call.object(1, RecordFields.self, typeName: "RecordFields")
                let keys = view.record.fields.keys.sorted()
                var next = 0
                call.state.push(function: "fields iterator") { [unowned self] call in
                    while next < keys.count {
                        let k = keys[next]
                        next += 1
                        if let v = view.record.fields[k] {
                            call.state.push(string: k)
                            push(v)
                            return 2
                        }
                    }
                    lua_pushnil(call.L)
                    return 1
                }
                return 1
            }
            .metamethod("__len") { call in
                let view = try call.object(1, RecordFields.self, typeName: "RecordFields")
                lua_pushinteger(call.L, lua_Integer(view.record.fields.count))
                return 1
            }
            .describe { view in
                "{" + view.record.fields.keys.sorted().map { "\($0) = \(view.record.fields[$0]!)" }.joined(separator: ", ") + "}"
            }
    }
}
