import CLua
import Foundation
import ShareFlow

/// `Database`: one of a container's databases (private, shared, public).
extension Bindings {
    func defineDatabase() {
        databaseClass
            .property("databaseScope") { lua, d in lua.push(string: d.databaseScope.rawValue) }
            .property("container") { [unowned self] _, d in push(container: d.container) }
            .method("saveZone") { [unowned self] call, d in
                let name = try call.string(2)
                return try pushResult { push(try d.saveZone(name)) }
            }
            .method("deleteZone") { [unowned self] call, d in
                // A zone ID, a zone, or the name of one of the caller's zones.
                let id: RecordZoneID
                if let name = call.state.string(at: 2), lua_type(call.L, 2) == LUA_TSTRING {
                    id = RecordZoneID(zoneName: name, ownerName: try d.container.session.account.userRecordID)
                } else {
                    id = try zoneID(call, 2, position: 2, defaultOwner: { try d.container.session.account.userRecordID })
                }
                return try pushResult {
                    try d.deleteZone(id)
                    lua_pushboolean(call.L, 1)
                }
            }
            .method("add") { [unowned self] call, d in
                let op = try operation(call, 2)
                do { try d.add(op.operation) } catch let e as ShareFlowError { throw call.argumentError(2, e.message) }
                return 0
            }
            .method("fetchAllRecordZones") { [unowned self] call, d in
                try pushResult {
                    let zones = try d.fetchAllRecordZones()
                    pushList(zones) { push($0) }
                }
            }
            .method("fetchRecord") { [unowned self] call, d in
                let id = try recordID(call, 2, position: 2)
                // A fetched record is a fresh copy: the caller's to change and save (R21).
                return try pushResult {
                    push(record: try d.fetchRecord(id))
                    lua.markWritable(at: -1)
                }
            }
            .method("fetchRecords") { [unowned self] call, d in
                try call.table(2)
                let ids = try (0..<call.listLength(2)).map { n -> RecordID in
                    try call.element(2, n + 1)
                    defer { call.state.pop() }
                    return try recordID(call, -1, position: 2)
                }
                let results = d.fetchRecords(ids)
                pushList(results.compactMap { try? $0.1.get() }) {
                    push(record: $0)
                    lua.markWritable(at: -1)
                }
                let failures = results.compactMap { id, r -> (item: String, error: ShareFlowError)? in
                    if case .failure(let e) = r { return (id.description, e) }
                    return nil
                }
                push(
                    failures.isEmpty
                        ? nil
                        : ShareFlowError(.partialFailure, "\(failures.count) of \(ids.count) records could not be fetched", partialErrors: failures)
                )
                return 2
            }
            .method("modifyRecords") { [unowned self] call, d in
                try call.table(2)
                try call.checkKeys(2, allowed: ["save", "delete", "savePolicy", "atomic"])
                var savePolicy = RecordSavePolicy.ifServerRecordUnchanged
                if call.field(2, "savePolicy") != LUA_TNIL {
                    savePolicy = try enumValue(call, -1, RecordSavePolicy.self, name: "savePolicy")
                }
                call.state.pop()
                var atomic = true
                switch call.field(2, "atomic") {
                case LUA_TNIL: break
                case LUA_TBOOLEAN: atomic = lua_toboolean(call.L, -1) != 0
                default: throw call.argumentError(2, "field 'atomic' must be a boolean, got \(call.typeName(-1))")
                }
                call.state.pop()
                var saving: [Record] = []
                var deleting: [RecordID] = []
                if call.field(2, "save") != LUA_TNIL {
                    try call.table(-1)
                    saving = try (0..<call.length(-1)).map { n -> Record in
                        try call.element(-1, n + 1)
                        defer { call.state.pop() }
                        guard let r = record(at: -1) else {
                            throw call.argumentError(2, "save[\(n + 1)] must be a record or share, got \(call.typeName(-1))")
                        }
                        // A save stamps what it saves (change tag, URL): not the caller's objects.
                        guard call.state.isWritable(at: -1) else {
                            throw call.argumentError(2, "save[\(n + 1)] is read-only in a plugin: it belongs to the caller")
                        }
                        return r
                    }
                }
                call.state.pop()
                if call.field(2, "delete") != LUA_TNIL {
                    try call.table(-1)
                    deleting = try (0..<call.length(-1)).map { n -> RecordID in
                        try call.element(-1, n + 1)
                        defer { call.state.pop() }
                        return try recordID(call, -1, position: 2)
                    }
                }
                call.state.pop()
                do {
                    let result = try d.modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomic)
                    pushList(result.saved) {
                        push(record: $0)
                        lua.markWritable(at: -1)
                    }
                    push(result.error)
                } catch let e as ShareFlowError {
                    lua_pushnil(call.L)
                    push(e)
                }
                return 2
            }
            // SPEC §20 N1: the caller's subscriptions in this database.
            .method("saveSubscription") { [unowned self] call, d in
                let s = try subscription(call, 2, kind: nil) { required in try subscriptionZone(call, 2, in: d, required: required) }
                return try pushResult {
                    let saved = try d.save(s)
                    push(subscription: saved)
                }
            }
            .method("fetchAllSubscriptions") { [unowned self] call, d in
                try pushResult {
                    let all = try d.fetchAllSubscriptions()
                    pushList(all) { push(subscription: $0) }
                }
            }
            .method("fetchSubscription") { [unowned self] call, d in
                let id = try subscriptionIDArgument(call, 2)
                return try pushResult {
                    let s = try d.fetchSubscription(withID: id)
                    push(subscription: s)
                }
            }
            .method("deleteSubscription") { [unowned self] call, d in
                let id = try subscriptionIDArgument(call, 2)
                return try pushResult {
                    try d.deleteSubscription(withID: id)
                    lua_pushboolean(call.L, 1)
                }
            }
            .describe { d in "Database(\(d.databaseScope.rawValue), \(d.container.containerIdentifier))" }
    }
}
