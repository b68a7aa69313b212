import CLua
import Foundation
import ShareFlow

/// `LookupInfo` (R1): how a person is found; a plain table with a metatable, or a string.
extension Bindings {
    static let lookupKeys: Set<String> = ["emailAddress", "phoneNumber", "userRecordID", "email", "phone"]

    /// A lookup from a `LookupInfo{...}` table, a plain table with one of the fields, or a
    /// string (email, phone or userRecordID). Bad values become a failed request, not a raise:
    /// R1 makes them per-item errors.
    func lookupRequest(_ call: LuaCall, _ i: Int32, position: Int32) throws -> LookupRequest {
        let L = call.L
        switch lua_type(L, i) {
        case LUA_TSTRING:
            let s = call.state.string(at: i)!
            if s.hasPrefix("_") { return LookupRequest(userRecordID: s) }
            return s.contains("@") ? LookupRequest(emailAddress: s) : LookupRequest(phoneNumber: s)
        case LUA_TTABLE:
            try call.checkKeys(i, allowed: Bindings.lookupKeys.union(["__lookup"]))
            let email = try call.stringField(i, "emailAddress") ?? call.stringField(i, "email")
            let phone = try call.stringField(i, "phoneNumber") ?? call.stringField(i, "phone")
            let user = try call.stringField(i, "userRecordID")
            return LookupRequest(emailAddress: email, phoneNumber: phone, userRecordID: user)
        default:
            throw call.argumentError(position, "LookupInfo or table expected, got \(call.typeName(i))")
        }
    }

    /// The list of lookups in the table at `i`.
    func lookupRequests(_ call: LuaCall, _ i: Int32) throws -> [LookupRequest] {
        let abs = lua_absindex(call.L, i)
        return try list(call, abs) { _ in try lookupRequest(call, -1, position: abs) }
    }

    /// A request's LookupInfo; one that names no valid address, as given under the field a
    /// string of its shape would fill (`@`: emailAddress, `_…`: userRecordID, else phoneNumber).
    func push(_ request: LookupRequest) {
        if let info = request.info { return push(info) }
        let L = lua.L
        lua_createtable(L, 0, 1)
        lua.push(string: request.given)
        if request.given.hasPrefix("_") {
            lua.setField(-2, "userRecordID")
        } else if request.given.contains("@") {
            lua.setField(-2, "emailAddress")
        } else {
            lua.setField(-2, "phoneNumber")
        }
        setMetatable(.lookupInfo)
    }

    func push(_ lookup: LookupInfo?) {
        guard let lookup else { return lua_pushnil(lua.L) }
        let L = lua.L
        // One field: sized for two, every event allocated a node array twice what it holds.
        lua_createtable(L, 0, 1)
        lua.push(string: lookup.value)
        lua.setField(-2, lookup.staticKind)
        setMetatable(.lookupInfo)
    }
}
