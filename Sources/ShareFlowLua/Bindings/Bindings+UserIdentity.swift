import CLua
import Foundation
import ShareFlow

/// `UserIdentity`: who a lookup found, a plain table with a metatable.
extension Bindings {
    func push(_ identity: UserIdentity?) {
        guard let identity else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 5)
        lua.setField("userRecordID", string: identity.userRecordID)
        push(identity.lookupInfo)
        lua_setfield(L, -2, "lookupInfo")
        push(identity.nameComponents)
        lua_setfield(L, -2, "nameComponents")
        lua_pushboolean(L, identity.hasiCloudAccount ? 1 : 0)
        lua_setfield(L, -2, "hasiCloudAccount")
        lua.push(strings: identity.contactIdentifiers)
        lua_setfield(L, -2, "contactIdentifiers")
        setMetatable(.userIdentity)
    }
}
