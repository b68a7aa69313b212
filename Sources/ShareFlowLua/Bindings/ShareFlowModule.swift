import CLua
import Foundation
import Logging
import ShareFlow

/// The `shareflow` table: the directory, sessions, constructors, operations, hooks and log.
package enum ShareFlowModule {
    package static let version = "0.1.0"

    // The operations' constructors come from the one list in `Bindings.defineOperations`.

    /// Fills the table on top of the stack.
    static func install(into lua: LuaState, host: ScriptHost, bindings b: Bindings) throws {
        let L = lua.L
        lua.push(string: version)
        lua_setfield(L, -2, "version")
        lua.push(strings: Event.names)
        lua_setfield(L, -2, "events")
        installLog(into: lua, host: host)
        installAccounts(lua, b)
        installSessions(lua, host, b)
        installConstructors(lua, host, b)
        Hooks.install(lua, host: host, bindings: b)
        installAdministration(lua, host, b)

        lua_createtable(L, 0, Int32(b.operationNames.count))
        for name in b.operationNames {
            lua.push(function: name) { [unowned b] _ in b.newOperation(name: name); return 1 }
            lua_setfield(L, -2, name)
        }
        lua_setfield(L, -2, "_newOperation")
        // Constructors that take a table of fields set them through the objects' own
        // __newindex, so a bad field is the same clear error as `op.bad = 1`.
        lua_pushvalue(L, -1)
        try lua.load(prelude, chunkName: "=[shareflow prelude]")
        clua_insert(L, -2)
        try lua.call(arguments: 1, results: 0)
    }

    /// `Lua/shareflow_prelude.lua`, embedded at build time (the EmbedLua plugin).
    static var prelude: String { EmbeddedLua.shareflowPrelude }

    static func installLog(into lua: LuaState, host: ScriptHost) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        let levels: [(String, Logger.Level)] = [("debug", .debug), ("info", .info), ("warn", .warning), ("error", .error)]
        for (name, level) in levels {
            lua.push(function: "log.\(name)") { [unowned host] call in
                var parts: [String] = []
                var bytes = 0
                for i in 1...max(call.count, 1) where call.count > 0 {
                    let part = describe(call.state, at: i)
                    bytes += part.utf8.count
                    parts.append(part)
                    if bytes > Sandbox.maxPrintBytes { break }  // past the per-call allowance anyway
                }
                host.log(level, parts.joined(separator: " "))
                return 0
            }
            lua_setfield(L, -2, name)
        }
        lua_setfield(L, -2, "log")
    }

    private static func installAccounts(_ lua: LuaState, _ b: Bindings) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        lua.push(function: "accounts.create") { [unowned b] call in
            try call.table(1)
            try call.checkKeys(1, allowed: ["email", "emails", "phone", "phones", "name", "discoverable"])
            var emails = try call.stringField(1, "email").map { [$0] } ?? []
            var phones = try call.stringField(1, "phone").map { [$0] } ?? []
            if call.field(1, "emails") != LUA_TNIL { emails += try b.stringList(call, -1) }
            call.state.pop()
            if call.field(1, "phones") != LUA_TNIL { phones += try b.stringList(call, -1) }
            call.state.pop()
            var name = NameComponents()
            switch call.field(1, "name") {
            case LUA_TNIL: break
            case LUA_TTABLE: name = try b.nameComponents(call, -1, position: 1)
            default:
                let got = call.typeName(-1)
                call.state.pop()
                throw call.argumentError(1, "field 'name' must be a table of name components ({ given = …, family = … }), got \(got)")
            }
            call.state.pop()
            let discoverable = try call.booleanField(1, "discoverable") ?? false
            let account = try b.raising { try b.engine.accounts.create(emails: emails, phones: phones, name: name, discoverable: discoverable) }
            b.push(account: account)
            return 1
        }
        lua_setfield(L, -2, "create")
        lua.push(function: "accounts.find") { [unowned b] call in
            let account: Account?
            if let who = call.state.string(at: 1) {
                account = try? b.engine.accounts.find(who)
            } else {
                let request = try b.lookupRequest(call, 1, position: 1)
                account = try request.info.flatMap { try b.engine.accounts.find($0) }
            }
            if let account { b.push(account: account) } else { lua_pushnil(call.L) }
            return 1
        }
        lua_setfield(L, -2, "find")
        lua.push(function: "accounts.get") { [unowned b] call in
            let id = try call.string(1)
            if let account = try b.engine.accounts.get(userRecordID: id) { b.push(account: account) } else { lua_pushnil(call.L) }
            return 1
        }
        lua_setfield(L, -2, "get")
        lua.push(function: "accounts.list") { [unowned b] _ in
            let all = try b.engine.accounts.list()
            b.pushList(all) { b.push(account: $0) }
            return 1
        }
        lua_setfield(L, -2, "list")
        lua.push(function: "accounts.count") { [unowned b] call in
            lua_pushinteger(call.L, lua_Integer(try b.engine.accounts.count()))
            return 1
        }
        lua_setfield(L, -2, "count")
        lua_setfield(L, -2, "accounts")
    }

    private static func installSessions(_ lua: LuaState, _ host: ScriptHost, _ b: Bindings) {
        let L = lua.L
        lua.push(function: "as") { [unowned b] call in
            let session: Session
            if let a = call.state.object(at: 1, typeName: b.accountClass.typeName, as: AccountHandle.self) {
                session = b.engine.session(for: try a.account)
            } else {
                let who = try call.string(1)
                session = try b.raising { try b.engine.session(for: who) }
            }
            b.push(session: session)
            return 1
        }
        lua_setfield(L, -2, "as")
        lua.push(function: "container") { [unowned b, unowned host] call in
            let id = try call.string(1)
            let environment = try b.containerOptions(call, 2)
            guard let who = host.defaultSession else {
                throw LuaRaise.message("shareflow.container: no acting user; pass --as WHO or use shareflow.as(who):container(id)")
            }
            let session = try b.raising { try b.engine.session(for: who) }
            b.push(container: try b.raising { try session.container(id, environment: environment) })
            return 1
        }
        lua_setfield(L, -2, "container")
    }

    private static func installConstructors(_ lua: LuaState, _ host: ScriptHost, _ b: Bindings) {
        let L = lua.L
        lua.push(function: "LookupInfo") { [unowned b] call in
            try call.table(1)
            try call.checkKeys(1, allowed: Bindings.lookupKeys)
            let set = ["emailAddress", "phoneNumber", "userRecordID", "email", "phone"].filter { key in
                defer { call.state.pop() }
                return call.field(1, key) != LUA_TNIL
            }
            guard set.count == 1 else {
                throw LuaRaise.message("LookupInfo: give exactly one of emailAddress, phoneNumber, userRecordID (R1)")
            }
            let request = try b.lookupRequest(call, 1, position: 1)
            lua_createtable(call.L, 0, 1)
            // Kept as given: a malformed value fails its own item in an operation (R1).
            call.state.push(string: request.info?.value ?? request.given)
            let kind = request.info?.kind ?? ["email": "emailAddress", "phone": "phoneNumber"][set[0]] ?? set[0]
            lua_setfield(call.L, -2, kind)
            b.setMetatable(.lookupInfo)
            return 1
        }
        lua_setfield(L, -2, "LookupInfo")

        lua.push(function: "Record") { [unowned b, unowned host] call in
            try call.table(1)
            try call.checkKeys(1, allowed: ["recordType", "recordName", "zone", "zoneID", "fields", "parent"])
            guard let type = try call.stringField(1, "recordType") else {
                throw call.argumentError(1, "field 'recordType' is required")
            }
            let name = try call.stringField(1, "recordName") ?? RandomIdentifier.uuidString()
            // R24: without a zone, the default zone of the database it is saved to.
            let zone = try zoneArgument(call, b, host, defaultZone: .default)
            let record = Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone))
            if call.field(1, "fields") != LUA_TNIL {
                try call.table(-1)
                record.fields = try b.fieldTable(call, -1)
            }
            call.state.pop()
            if call.field(1, "parent") != LUA_TNIL { record.parent = try b.recordID(call, -1, position: 1) }
            call.state.pop()
            b.push(record: record)
            call.state.markWritable(at: -1)
            return 1
        }
        lua_setfield(L, -2, "Record")

        lua.push(function: "Share") { [unowned b, unowned host] call in
            try call.table(1)
            try call.checkKeys(1, allowed: ["rootRecord", "zone", "zoneID", "title", "publicPermission", "recordName"])
            let share: Share
            if call.field(1, "rootRecord") != LUA_TNIL {
                guard let root = b.record(at: -1), !(root is Share) else {
                    throw call.argumentError(1, "field 'rootRecord' must be a record, got \(call.typeName(-1))")
                }
                // A share marks its root record: in a plugin, only a record the plugin made.
                guard call.state.isWritable(at: -1) else {
                    throw call.argumentError(1, "field 'rootRecord' is read-only in a plugin: it belongs to the caller")
                }
                call.state.pop()
                share = try call.stringField(1, "recordName").map { Share(rootRecord: root, recordName: $0) } ?? Share(rootRecord: root)
            } else {
                call.state.pop()
                share = Share(zoneID: try zoneArgument(call, b, host))
            }
            share.title = try call.stringField(1, "title")
            if call.field(1, "publicPermission") != LUA_TNIL {
                share.publicPermission = try enumValue(call, -1, ParticipantPermission.self, name: "publicPermission")
            }
            call.state.pop()
            b.push(record: share)
            call.state.markWritable(at: -1)
            return 1
        }
        lua_setfield(L, -2, "Share")

        lua.push(function: "RecordID") { [unowned b] call in
            try call.table(1)
            b.push(try b.recordID(call, 1, position: 1))
            return 1
        }
        lua_setfield(L, -2, "RecordID")

        // R23's value types: each checked as the engine checks it, so a bad one fails here.
        lua.push(function: "Bytes") { [unowned b] call in
            guard lua_type(call.L, 1) == LUA_TSTRING else { throw call.argumentError(1, "string expected, got \(call.typeName(1))") }
            var len = 0
            let p = lua_tolstring(call.L, 1, &len)!
            b.push(FieldValue.bytes(Data(bytes: p, count: len)))
            return 1
        }
        lua_setfield(L, -2, "Bytes")
        lua.push(function: "Date") { [unowned b] call in
            let seconds = try call.number(1)
            guard seconds.isFinite else { throw call.argumentError(1, "seconds must be finite, got \(seconds)") }
            b.push(FieldValue.date(Date(timeIntervalSince1970: seconds)))
            return 1
        }
        lua_setfield(L, -2, "Date")
        lua.push(function: "Location") { [unowned b] call in
            try call.table(1)
            try call.checkKeys(1, allowed: ["latitude", "longitude"])
            guard let lat = try call.numberField(1, "latitude"), let lon = try call.numberField(1, "longitude") else {
                throw call.argumentError(1, "fields 'latitude' and 'longitude' are required")
            }
            let location = Location(latitude: lat, longitude: lon)
            if let problem = location.problem { throw call.argumentError(1, problem) }
            b.push(FieldValue.location(location))
            return 1
        }
        lua_setfield(L, -2, "Location")
        lua.push(function: "Reference") { [unowned b] call in
            try call.table(1)
            try call.checkKeys(1, allowed: ["recordID", "record", "action"])
            if call.field(1, "recordID") == LUA_TNIL { call.state.pop(); call.field(1, "record") }
            guard lua_type(call.L, -1) != LUA_TNIL else { throw call.argumentError(1, "field 'recordID' is required") }
            let id = try b.recordID(call, -1, position: 1)
            call.state.pop()
            var action = ReferenceAction.none
            if let name = try call.stringField(1, "action") {
                guard let a = ReferenceAction(rawValue: name) else {
                    throw call.argumentError(1, "invalid reference action '\(name)' (expected one of: none, deleteSelf)")
                }
                action = a
            }
            b.push(FieldValue.reference(id, action: action))
            return 1
        }
        lua_setfield(L, -2, "Reference")
    }

    /// The `zone`/`zoneID` field of a constructor's table.
    private static func zoneArgument(_ call: LuaCall, _ b: Bindings, _ host: ScriptHost,
                                     defaultZone: RecordZoneID? = nil) throws -> RecordZoneID {
        if call.field(1, "zone") == LUA_TNIL {
            call.state.pop()
            call.field(1, "zoneID")
        }
        defer { call.state.pop() }
        if lua_type(call.L, -1) == LUA_TNIL, let defaultZone { return defaultZone }
        guard lua_type(call.L, -1) != LUA_TNIL else {
            throw call.argumentError(1, "field 'zone' is required (a zone from db:saveZone, or a zoneID)")
        }
        return try b.zoneID(call, -1, position: 1, defaultOwner: {
            guard let who = host.defaultSession, let a = try b.engine.accounts.find(who) else {
                throw call.argumentError(1, "a zone given by name needs --as WHO; pass the zone object from db:saveZone instead")
            }
            return a.userRecordID
        })
    }

    /// `tostring` without running Lua metamethods other than under pcall.
    static func describe(_ lua: LuaState, at i: Int32) -> String {
        let L = lua.L
        switch lua_type(L, i) {
        case LUA_TSTRING: return lua.string(at: i) ?? ""
        case LUA_TNUMBER, LUA_TBOOLEAN, LUA_TNIL:
            return (try? lua.value(at: i).description) ?? "?"
        default:
            // The metamethod runs under lua_pcall: it must not longjmp through this frame.
            if luaL_getmetafield(L, i, "__tostring") != LUA_TNIL {
                lua_pushvalue(L, i)
                if (try? lua.call(arguments: 1, results: 1)) != nil {
                    defer { lua.pop() }
                    if let s = lua.string(at: -1) { return s }
                }
            }
            return String(cString: clua_typename_at(L, i))
        }
    }
}
