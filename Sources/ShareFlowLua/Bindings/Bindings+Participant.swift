import CLua
import Foundation
import ShareFlow

/// `Participant`: one person on a share, with a role, a permission and an acceptance status.
extension Bindings {
    func defineParticipant() {
        participantClass
            .property("participantID") { lua, p in lua.push(string: p.participantID) }
            .property("userIdentity") { [unowned self] _, p in push(p.userIdentity) }
            .property(
                "role",
                get: { lua, p in lua.push(string: p.role.rawValue) },
                set: { call, p, i in
                    // R26: the owner's save decides whether the change is allowed.
                    p.role = try enumValue(call, i, ParticipantRole.self, name: "role")
                }
            )
            .property(
                "permission",
                get: { lua, p in lua.push(string: p.permission.rawValue) },
                set: { call, p, i in p.permission = try enumValue(call, i, ParticipantPermission.self, name: "permission") }
            )
            .property("acceptanceStatus") { lua, p in lua.push(string: p.acceptanceStatus.rawValue) }
            .property("isApprovedRequester") { lua, p in try lua.push(.boolean(p.isApprovedRequester)) }
            .property("isOneTimeURLParticipant") { lua, p in try lua.push(.boolean(p.isOneTimeURLParticipant)) }
            .property("dateAddedToShare") { lua, p in try lua.push(p.dateAddedToShare.map { .number($0.timeIntervalSince1970) } ?? .nil) }
            .describe { $0.description }
    }
}
