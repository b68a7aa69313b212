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
