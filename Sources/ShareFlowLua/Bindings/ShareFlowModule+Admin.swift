import CLua
import Foundation
import ShareFlow

/// `sf.admin`: operator actions (pending invitations, removing a participant, auditing shares).
extension ShareFlowModule {
    static func adminFunctions(_ lua: LuaState, _ b: Bindings) -> [ModuleFunction] {
        [
            (
                "pendingInvitations",
                { [unowned b] call in
                    var age = 0.0
                    if !call.isNil(1) {
                        try call.table(1)
                        try call.checkKeys(1, allowed: ["olderThan"])
                        age = try call.numberField(1, "olderThan") ?? 0
                        guard age.isFinite, age >= 0 else {
                            throw call.argumentError(1, "field 'olderThan' must be a finite number of seconds, 0 or more")
                        }
                    }
                    let invitations = try b.raising { try b.engine.pendingInvitations(olderThan: age) }
                    let now = EngineClock.seconds
                    b.pushList(invitations) { inv in
                        lua_createtable(call.L, 0, 6)
                        lua.push(string: inv.participantID)
                        lua_setfield(call.L, -2, "participantID")
                        lua.push(string: inv.shareURL)
                        lua_setfield(call.L, -2, "url")
                        lua.setField("title", string: inv.shareTitle)
                        b.push(inv.lookupInfo)
                        lua_setfield(call.L, -2, "lookupInfo")
                        lua_pushnumber(call.L, inv.addedAt)
                        lua_setfield(call.L, -2, "addedAt")
                        lua_pushnumber(call.L, now - inv.addedAt)
                        lua_setfield(call.L, -2, "age")
                    }
                    return 1
                }
            ),
            (
                "accessRequests",
                { [unowned b] call in
                    // SPEC §17: open requests across the store, oldest first, at most `limit`.
                    var age = 0.0
                    var limit = 1000
                    if !call.isNil(1) {
                        try call.table(1)
                        try call.checkKeys(1, allowed: ["olderThan", "limit"])
                        age = try call.numberField(1, "olderThan") ?? 0
                        guard age.isFinite, age >= 0 else {
                            throw call.argumentError(1, "field 'olderThan' must be a finite number of seconds, 0 or more")
                        }
                        let n = try call.numberField(1, "limit") ?? 1000
                        guard n.isFinite, n == n.rounded(), (1...10_000).contains(n) else {
                            throw call.argumentError(1, "field 'limit' must be a whole number from 1 to 10000")
                        }
                        limit = Int(n)
                    }
                    let open = try b.raising { try b.engine.accessRequests(olderThan: age, limit: limit) }
                    let now = EngineClock.seconds
                    b.pushList(open) { r in
                        b.push(requester: r.requester)
                        lua.push(string: r.shareURL)
                        lua_setfield(call.L, -2, "url")
                        lua.setField("title", string: r.shareTitle)
                        lua_pushnumber(call.L, now - r.requester.requestedAt.timeIntervalSince1970)
                        lua_setfield(call.L, -2, "age")
                    }
                    return 1
                }
            ),
            (
                "removeParticipant",
                { [unowned b] call in
                    let id = try call.string(1)
                    let reasonName = try call.optionalString(2) ?? "removedByOwner"
                    // `blocked` is a block's own reason (share:blockRequesters), not one to give here.
                    guard let reason = RemovalReason(rawValue: reasonName), reason != .blocked else {
                        throw call.argumentError(
                            2,
                            "unknown reason '\(reasonName)' (expected removedByOwner, left, publicPermissionChanged, shareDeleted, expired)"
                        )
                    }
                    let removed = try b.raising { try b.engine.removeParticipant(id, reason: reason) }
                    lua_pushboolean(call.L, removed ? 1 : 0)
                    return 1
                }
            ),
            (
                "shares",
                { [unowned b] call in
                    var owner: String?
                    var participant: String?
                    var container: String?
                    if !call.isNil(1) {
                        try call.table(1)
                        try call.checkKeys(1, allowed: ["owner", "participant", "container"])
                        owner = try call.stringField(1, "owner")
                        participant = try call.stringField(1, "participant")
                        container = try call.stringField(1, "container")
                    }
                    let audits = try b.raising { try b.engine.auditShares(owner: owner, participant: participant, container: container) }
                    try call.state.checkStack(6)
                    b.pushList(audits) { a in
                        lua_createtable(call.L, 0, 9)
                        lua.push(string: a.url)
                        lua_setfield(call.L, -2, "url")
                        lua.push(string: a.containerIdentifier)
                        lua_setfield(call.L, -2, "container")
                        lua.push(string: a.environment.rawValue)
                        lua_setfield(call.L, -2, "environment")
                        b.push(a.shareRecordID)
                        lua_setfield(call.L, -2, "recordID")
                        lua.setField("title", string: a.title)
                        lua_createtable(call.L, 0, 2)
                        lua.push(string: a.ownerUserRecordID)
                        lua_setfield(call.L, -2, "userRecordID")
                        b.push(a.ownerLookupInfo)
                        lua_setfield(call.L, -2, "lookupInfo")
                        lua_setfield(call.L, -2, "owner")
                        b.push(a.rootRecordID)
                        lua_setfield(call.L, -2, "rootRecordID")
                        lua.push(string: a.publicPermission.rawValue)
                        lua_setfield(call.L, -2, "publicPermission")
                        b.pushList(a.participants) { p in
                            lua_createtable(call.L, 0, 6)
                            lua.push(string: p.participantID)
                            lua_setfield(call.L, -2, "participantID")
                            b.push(p.lookupInfo)
                            lua_setfield(call.L, -2, "lookupInfo")
                            lua.setField("userRecordID", string: p.userRecordID)
                            lua.push(string: p.role.rawValue)
                            lua_setfield(call.L, -2, "role")
                            lua.push(string: p.permission.rawValue)
                            lua_setfield(call.L, -2, "permission")
                            lua.push(string: p.acceptanceStatus.rawValue)
                            lua_setfield(call.L, -2, "acceptanceStatus")
                        }
                        lua_setfield(call.L, -2, "participants")
                    }
                    return 1
                }
            ),
        ]
    }
}
