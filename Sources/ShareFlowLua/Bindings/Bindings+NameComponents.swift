import CLua
import Foundation
import ShareFlow

/// `NameComponents`: a person's name, a plain table with a metatable.
extension Bindings {
    func push(_ name: NameComponents?) {
        guard let name else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 4)
        let parts: [(String, String?)] = [
            ("prefix", name.namePrefix), ("given", name.givenName), ("middle", name.middleName),
            ("family", name.familyName), ("suffix", name.nameSuffix), ("nickname", name.nickname),
        ]
        for (k, v) in parts {
            if let v {
                lua.push(string: v)
                lua_setfield(L, -2, k)
            }
        }
        setMetatable(.nameComponents)
    }

    func nameComponents(_ call: LuaCall, _ i: Int32, position: Int32) throws -> NameComponents {
        try call.checkKeys(i, allowed: ["given", "family", "middle", "prefix", "suffix", "nickname", "givenName", "familyName"])
        return NameComponents(
            namePrefix: try call.stringField(i, "prefix"),
            givenName: try call.stringField(i, "given") ?? call.stringField(i, "givenName"),
            middleName: try call.stringField(i, "middle"),
            familyName: try call.stringField(i, "family") ?? call.stringField(i, "familyName"),
            nameSuffix: try call.stringField(i, "suffix"),
            nickname: try call.stringField(i, "nickname")
        )
    }
}
