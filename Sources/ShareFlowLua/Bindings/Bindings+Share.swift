import CLua
import Foundation
import ShareFlow

/// `Share`: a record that shares its root record's hierarchy or a zone; its participants
/// and permissions. (Its record properties come from `defineRecord`.)
extension Bindings {
    func defineShare() {
        shareClass
            .property("url") { lua, s in try lua.push(s.url.map { .string($0) } ?? .nil) }
            .property(
                "title",
                get: { lua, s in try lua.push(s.title.map { .string($0) } ?? .nil) },
                set: { call, s, i in s.title = try call.optionalString(i) }
            )
            .property(
                "publicPermission",
                get: { lua, s in lua.push(string: s.publicPermission.rawValue) },
                set: { call, s, i in s.publicPermission = try enumValue(call, i, ParticipantPermission.self, name: "publicPermission") }
            )
            .property(
                "allowsAccessRequests",
                get: { lua, s in try lua.push(.boolean(s.allowsAccessRequests)) },
                set: { call, s, i in
                    guard lua_type(call.L, i) == LUA_TBOOLEAN else {
                        throw call.argumentError(i, "allowsAccessRequests must be a boolean, got \(call.typeName(i))")
                    }
                    // R38 at once: on a saved share, only its owner's or an administrator's copy
                    // may change it (the save refuses anyone else's anyway).
                    if let me = s.currentUserParticipant, me.role != .owner, me.role != .administrator {
                        throw call.argumentError(i, "only the share's owner or an administrator changes allowsAccessRequests (R38)")
                    }
                    s.allowsAccessRequests = lua_toboolean(call.L, i) != 0
                }
            )
            .property("requesters") { [unowned self] _, s in pushList(s.requesters) { push(requester: $0) } }
            .property("blockedIdentities") { [unowned self] _, s in pushList(s.blockedIdentities) { push(blocked: $0) } }
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
            .method("oneTimeURL") { call, s in
                // R44: nil before the save, for another participant, or in a copy that is not
                // the owner's or an administrator's.
                let id = try call.string(2)
                try call.state.push(s.oneTimeURL(for: id).map { .string($0) } ?? .nil)
                return 1
            }
            .method("denyRequesters", mutating: true) { [unowned self] call, s in
                let ids = try accessIDs(call, 2, key: "requestID", method: "denyRequesters")
                try requireKnown(call, ids, s.requesters.map(\.requestID), "an open request")
                s.denyRequesters(s.requesters.filter { ids.contains($0.requestID) })
                return 0
            }
            .method("blockRequesters", mutating: true) { [unowned self] call, s in
                // Requesters, and (ShareFlow's choice, R41) participants: each by its ID.
                let ids = try accessIDs(call, 2, key: "requestID", method: "blockRequesters", participants: true)
                try requireKnown(call, ids, s.requesters.map(\.requestID) + s.participants.map(\.participantID), "an open request or a participant")
                s.blockRequesters(s.requesters.filter { ids.contains($0.requestID) })
                s.blockParticipants(s.participants.filter { ids.contains($0.participantID) })
                return 0
            }
            .method("unblockIdentities", mutating: true) { [unowned self] call, s in
                let ids = try accessIDs(call, 2, key: "blockID", method: "unblockIdentities")
                try requireKnown(call, ids, s.blockedIdentities.map(\.blockID), "a blocked identity")
                s.unblockIdentities(s.blockedIdentities.filter { ids.contains($0.blockID) })
                return 0
            }
            .method("approveRequesters", mutating: true) { [unowned self] call, s in
                let ids = try accessIDs(call, 2, key: "requestID", method: "approveRequesters")
                try requireKnown(call, ids, s.requesters.map(\.requestID), "an open request")
                var permission = ParticipantPermission.readOnly
                var role = ParticipantRole.privateUser
                if !call.isNil(3) {
                    try call.table(3)
                    try call.checkKeys(3, allowed: ["permission", "role"])
                    if call.field(3, "permission") != LUA_TNIL {
                        permission = try enumValue(call, -1, ParticipantPermission.self, name: "permission")
                    }
                    call.state.pop()
                    if call.field(3, "role") != LUA_TNIL { role = try enumValue(call, -1, ParticipantRole.self, name: "role") }
                    call.state.pop()
                }
                s.approveRequesters(s.requesters.filter { ids.contains($0.requestID) }, permission: permission, role: role)
                return 0
            }
            .describe { $0.description }
    }

    /// The IDs a list names for a requesters' method: each item an ID string, a table with the
    /// string `key` (a requester or blocked identity as `requesters` gives them), or with
    /// `participants`, a Participant. Read raw: no metamethod runs.
    private func accessIDs(_ call: LuaCall, _ i: Int32, key: String, method: String, participants: Bool = false) throws -> Set<String> {
        let abs = lua_absindex(call.L, i)
        guard lua_type(call.L, abs) == LUA_TTABLE else {
            throw call.argumentError(abs, "\(method) takes a list, got \(call.typeName(abs))")
        }
        let ids = try list(call, abs) { n -> String in
            if lua_type(call.L, -1) == LUA_TSTRING, let s = call.state.string(at: -1) { return s }
            if participants, let p = call.state.object(at: -1, typeName: participantClass.typeName, as: Participant.self) {
                return p.participantID
            }
            if lua_type(call.L, -1) == LUA_TTABLE, let s = try call.stringField(-1, key) { return s }
            throw call.argumentError(
                abs,
                "item \(n + 1) must be an ID string or a table with \(key)\(participants ? " or a Participant" : ""), got \(call.typeName(-1))"
            )
        }
        var seen = Set<String>()
        for (n, id) in ids.enumerated() where !seen.insert(id).inserted {
            // A list naming one twice is a mistake worth saying, not a request to repeat.
            throw call.argumentError(abs, "item \(n + 1) names \(Naming.printable(id)) again")
        }
        return seen
    }

    /// Every ID names something of this copy of the share (its lists as read): a stale or
    /// mistyped one is an error naming it, never silently nothing.
    private func requireKnown(_ call: LuaCall, _ ids: Set<String>, _ known: [String], _ what: String) throws {
        guard let missing = ids.subtracting(known).sorted().first else { return }
        throw call.argumentError(2, "\(Naming.printable(missing)) is not \(what) of this share (as this copy read it)")
    }

    /// A requester as a table (R40): `requestID`, `userIdentity`, `participantLookupInfo`,
    /// `requestedAt` (seconds since 1970).
    func push(requester r: Share.AccessRequester) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        lua.setField("requestID", string: r.requestID)
        push(r.userIdentity)
        lua_setfield(L, -2, "userIdentity")
        push(r.participantLookupInfo)
        lua_setfield(L, -2, "participantLookupInfo")
        lua_pushnumber(L, r.requestedAt.timeIntervalSince1970)
        lua_setfield(L, -2, "requestedAt")
    }

    /// A blocked identity as a table: `blockID`, `userIdentity`, `lookupInfo`, `blockedAt`.
    func push(blocked b: Share.BlockedIdentity) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        lua.setField("blockID", string: b.blockID)
        push(b.userIdentity)
        lua_setfield(L, -2, "userIdentity")
        push(b.lookupInfo)
        lua_setfield(L, -2, "lookupInfo")
        lua_pushnumber(L, b.blockedAt.timeIntervalSince1970)
        lua_setfield(L, -2, "blockedAt")
    }
}
