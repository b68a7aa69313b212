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
}
