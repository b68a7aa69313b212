import CLua
import Foundation
import ShareFlow

/// Records, shares, their fields, participants and metadata.
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
            .property("fields", get: { [unowned self] _, r in
                          // The view may change the record only where the record may be changed.
                          let writable = lua.isWritable(at: 1)
                          fieldsClass.push(RecordFields(record: r), in: lua)
                          if writable { lua.markWritable(at: -1) }
                      },
                      set: { [unowned self] call, r, i in
                          try call.table(i)
                          r.fields = try fieldTable(call, i)
                          call.state.recharge(at: 1)
                      })
            .property("parent", get: { [unowned self] _, r in push(r.parent) },
                      set: { [unowned self] call, r, i in
                          r.parent = call.isNil(i) ? nil : try recordID(call, i, position: 3)
                      })
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

    func defineShare() {
        shareClass
            .property("url") { lua, s in try lua.push(s.url.map { .string($0) } ?? .nil) }
            .property("title", get: { lua, s in try lua.push(s.title.map { .string($0) } ?? .nil) },
                      set: { call, s, i in s.title = try call.optionalString(i) })
            .property("publicPermission", get: { lua, s in lua.push(string: s.publicPermission.rawValue) },
                      set: { call, s, i in s.publicPermission = try enumValue(call, i, ParticipantPermission.self, name: "publicPermission") })
            .property("participants") { [unowned self] _, s in pushList(s.participants) { push(participant: $0) } }
            .property("owner") { [unowned self] _, s in push(participant: s.owner) }
            .property("currentUserParticipant") { [unowned self] _, s in push(participant: s.currentUserParticipant) }
            .property("rootRecordID") { [unowned self] _, s in push(s.rootRecordID) }
            .property("isZoneShare") { lua, s in try lua.push(.boolean(s.isZoneShare)) }
            .method("addParticipant", mutating: true) { [unowned self] call, s in
                let p = try call.object(2, Participant.self, typeName: participantClass.typeName)
                try requireWritable(call, 2, "Participant")
                s.addParticipant(p)
                return 0
            }
            .method("removeParticipant", mutating: true) { [unowned self] call, s in
                let p = try call.object(2, Participant.self, typeName: participantClass.typeName)
                try requireWritable(call, 2, "Participant")
                s.removeParticipant(p)
                return 0
            }
            .describe { $0.description }
    }

    func defineParticipant() {
        participantClass
            .property("participantID") { lua, p in lua.push(string: p.participantID) }
            .property("userIdentity") { [unowned self] _, p in push(p.userIdentity) }
            .property("role", get: { lua, p in lua.push(string: p.role.rawValue) },
                      set: { call, p, i in
                          // R26: the owner's save decides whether the change is allowed.
                          p.role = try enumValue(call, i, ParticipantRole.self, name: "role")
                      })
            .property("permission", get: { lua, p in lua.push(string: p.permission.rawValue) },
                      set: { call, p, i in p.permission = try enumValue(call, i, ParticipantPermission.self, name: "permission") })
            .property("acceptanceStatus") { lua, p in lua.push(string: p.acceptanceStatus.rawValue) }
            .describe { $0.description }
    }

    func defineMetadata() {
        metadataClass
            .property("containerIdentifier") { lua, m in lua.push(string: m.containerIdentifier) }
            .property("environment") { lua, m in lua.push(string: m.environment.rawValue) }
            .property("share") { [unowned self] _, m in push(record: m.share) }
            .property("url") { lua, m in lua.push(string: m.url) }
            .property("ownerIdentity") { [unowned self] _, m in push(m.ownerIdentity) }
            .property("hierarchicalRootRecordID") { [unowned self] _, m in push(m.hierarchicalRootRecordID) }
            .property("rootRecord") { [unowned self] _, m in push(record: m.rootRecord) }
            .property("participantRole") { lua, m in lua.push(string: m.participantRole.rawValue) }
            .property("participantStatus") { lua, m in lua.push(string: m.participantStatus.rawValue) }
            .property("participantPermission") { lua, m in lua.push(string: m.participantPermission.rawValue) }
            .describe { $0.description }
    }

    // MARK: Helpers

    /// In a plugin, an engine call that changes its argument (a share adopting a participant or
    /// a root record, a save stamping a record) takes only objects the plugin made.
    func requireWritable(_ call: LuaCall, _ i: Int32, _ typeName: String) throws {
        guard call.state.isWritable(at: i) else {
            throw call.argumentError(i, "\(typeName) is read-only in a plugin: it belongs to the caller")
        }
    }

    func pushList<T>(_ items: [T], _ push: (T) -> Void) {
        lua_createtable(lua.L, Int32(items.count), 0)
        for (n, item) in items.enumerated() {
            push(item)
            lua_rawseti(lua.L, -2, lua_Integer(n + 1))
        }
    }

    /// The sequence in the table at `i`, each element read by `read` while it is on top of
    /// the stack (at -1); `read` gets the element's index from 0.
    func list<T>(_ call: LuaCall, _ i: Int32, _ read: (Int) throws -> T) throws -> [T] {
        try call.table(i)
        let abs = lua_absindex(call.L, i)
        return try (0..<call.listLength(abs)).map { n in
            try call.element(abs, n + 1)
            defer { call.state.pop() }
            return try read(n)
        }
    }

    func stringList(_ call: LuaCall, _ i: Int32) throws -> [String] {
        let abs = lua_absindex(call.L, i)
        return try list(call, abs) { n in
            guard let s = call.state.string(at: -1) else {
                throw call.argumentError(abs, "item \(n + 1) must be a string, got \(call.typeName(-1))")
            }
            return s
        }
    }

    func metadataList(_ call: LuaCall, _ i: Int32) throws -> [ShareMetadata] {
        try list(call, i) { n in
            guard let m = call.state.object(at: -1, typeName: metadataClass.typeName, as: ShareMetadata.self) else {
                throw call.argumentError(i, "item \(n + 1): ShareMetadata expected, got \(call.typeName(-1))")
            }
            return m
        }
    }
}

/// An enum from its string; an unknown string is an error naming the value and the choices.
/// As `luaL_checkoption`: an argument's error names its position; a table field's (at a
/// negative index) the caller's `file:line:`.
func enumValue<E: RawRepresentable & CaseIterable>(_ call: LuaCall, _ i: Int32, _ type: E.Type, name: String) throws -> E where E.RawValue == String {
    let reason = { (got: String) in "invalid \(name) \(got); expected one of: \(E.allCases.map(\.rawValue).joined(separator: ", "))" }
    guard lua_type(call.L, i) == LUA_TSTRING, let s = call.state.string(at: i) else {
        if i > 0 { throw call.argumentError(i, "string expected, got \(call.typeName(i))") }
        throw LuaRaise.message(call.position + reason("(a \(call.typeName(i)))"))
    }
    guard let v = E(rawValue: s) else {
        if i > 0 { throw call.argumentError(i, reason("'\(s)'")) }
        throw LuaRaise.message(call.position + reason("'\(s)'"))
    }
    return v
}
