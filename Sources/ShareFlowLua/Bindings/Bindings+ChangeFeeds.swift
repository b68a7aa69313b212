import CLua
import Foundation
import ShareFlow

/// The change feeds' one-call forms (SPEC §14, O9, O10): tokens are strings (opaque; compare
/// with `==`).
///
/// ```lua
/// local page = assert(db:recordZoneChanges{ zoneID = zone, since = token })
/// for _, r in ipairs(page.modifications) do copy[r.recordName] = r end
/// for _, d in ipairs(page.deletions) do copy[d.recordID.recordName] = nil end
/// token = page.changeToken  -- ask again while page.moreComing
/// ```
extension Bindings {
    func defineChangeFeedMethods() {
        // db:recordZoneChanges{ zoneID =, since =, resultsLimit =, desiredKeys = }
        //   → { modifications =, deletions = { { recordID =, recordType = }… }, changeToken =, moreComing = }, err
        databaseClass.method("recordZoneChanges") { [unowned self] call, d in
            try call.table(2)
            try call.checkKeys(2, allowed: ["zoneID", "zone", "since", "resultsLimit", "desiredKeys"])
            if call.field(2, "zoneID") == LUA_TNIL {
                call.state.pop()
                call.field(2, "zone")
            }
            guard lua_type(call.L, -1) != LUA_TNIL else { throw call.argumentError(2, "field 'zoneID' is required") }
            let zone = try zoneID(call, -1, position: 2, defaultOwner: { try d.zoneID("_").ownerName })
            call.state.pop()
            let since = try sinceToken(call)
            let limit = try call.integerField(2, "resultsLimit", in: 1...Engine.feedResultsLimitMaximum)
            var keys: [String]?
            if call.field(2, "desiredKeys") != LUA_TNIL { keys = try stringList(call, -1) }
            call.state.pop()
            return try pushResult {
                let page = try d.recordZoneChanges(zone, since: since, resultsLimit: limit, desiredKeys: keys)
                let L = call.L
                pushFeedPage(
                    page.modifications,
                    page.deletions,
                    token: page.changeToken,
                    moreComing: page.moreComing,
                    L: L,
                    modification: {
                        push(record: $0)
                        lua.markWritable(at: -1)
                    },
                    deletion: { deletion in
                        push(deletion.recordID)
                        lua_setfield(L, -2, "recordID")
                        lua.push(string: deletion.recordType)
                        lua_setfield(L, -2, "recordType")
                    }
                )
            }
        }
        // db:databaseChanges{ since =, resultsLimit = }
        //   → { modifications = { zoneID… }, deletions = { { zoneID =, reason = }… }, changeToken =, moreComing = }, err
        databaseClass.method("databaseChanges") { [unowned self] call, d in
            if lua_type(call.L, 2) <= LUA_TNIL {
                // No options: from the start.
                lua_settop(call.L, 1)
                lua_createtable(call.L, 0, 0)
            }
            try call.table(2)
            try call.checkKeys(2, allowed: ["since", "resultsLimit"])
            let since = try sinceToken(call)
            let limit = try call.integerField(2, "resultsLimit", in: 1...Engine.feedResultsLimitMaximum)
            return try pushResult {
                let page = try d.databaseChanges(since: since, resultsLimit: limit)
                let L = call.L
                pushFeedPage(
                    page.changedZoneIDs,
                    page.deletions,
                    token: page.changeToken,
                    moreComing: page.moreComing,
                    L: L,
                    modification: { push($0) },
                    deletion: { deletion in
                        push(deletion.zoneID)
                        lua_setfield(L, -2, "zoneID")
                        lua.push(string: deletion.reason)
                        lua_setfield(L, -2, "reason")
                    }
                )
            }
        }
        // db:currentChangeToken(zoneID) → token, err
        databaseClass.method("currentChangeToken") { [unowned self] call, d in
            let zone = try zoneID(call, 2, position: 2, defaultOwner: { try d.zoneID("_").ownerName })
            return try pushResult { lua.push(string: try d.currentChangeToken(zone)) }
        }
        // db:currentDatabaseChangeToken() → token, err
        databaseClass.method("currentDatabaseChangeToken") { [unowned self] _, d in
            try pushResult { lua.push(string: try d.currentDatabaseChangeToken()) }
        }
    }

    /// Field `since` of the table at 2: a token string, or nil (from the start).
    private func sinceToken(_ call: LuaCall) throws -> String? {
        defer { call.state.pop() }
        switch call.field(2, "since") {
        case LUA_TNIL: return nil
        case LUA_TSTRING: return call.state.string(at: -1)
        default: throw call.argumentError(2, "field 'since' must be a change token (a string) or nil, got \(call.typeName(-1))")
        }
    }

    /// A feed page as both one-call forms give it: `{ modifications = {…}, deletions = { {…}… },
    /// changeToken =, moreComing = }`; `deletion` sets the fields of the table made for each.
    private func pushFeedPage<Changed, Deleted>(
        _ modifications: [Changed],
        _ deletions: [Deleted],
        token: String,
        moreComing: Bool,
        L: OpaquePointer,
        modification: (Changed) -> Void,
        deletion: (Deleted) -> Void
    ) {
        lua_createtable(L, 0, 4)
        pushList(modifications, modification)
        lua_setfield(L, -2, "modifications")
        pushList(deletions) { gone in
            lua_createtable(L, 0, 2)
            deletion(gone)
        }
        lua_setfield(L, -2, "deletions")
        lua.push(string: token)
        lua_setfield(L, -2, "changeToken")
        lua_pushboolean(L, moreComing ? 1 : 0)
        lua_setfield(L, -2, "moreComing")
    }
}
