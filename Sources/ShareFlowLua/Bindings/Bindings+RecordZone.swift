import CLua
import Foundation
import ShareFlow

/// `RecordZoneID` and `RecordZone`: plain tables with a metatable.
extension Bindings {
    func push(_ zoneID: RecordZoneID) {
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(string: zoneID.zoneName)
        lua_setfield(L, -2, "zoneName")
        lua.push(string: zoneID.ownerName)
        lua_setfield(L, -2, "ownerName")
        setMetatable(.recordZoneID)
    }

    func push(_ zone: RecordZone) {
        let L = lua.L
        lua_createtable(L, 0, 2)
        push(zone.zoneID)
        lua_setfield(L, -2, "zoneID")
        lua.push(string: zone.zoneID.zoneName)
        lua_setfield(L, -2, "zoneName")
        setMetatable(.recordZone)
    }

    /// A zone ID from a zone table (`{zoneID = …}`), a zone ID table, or a zone name (the
    /// caller's own zone).
    func zoneID(_ call: LuaCall, _ i: Int32, position: Int32, defaultOwner: () throws -> String) throws -> RecordZoneID {
        let L = call.L
        if lua_type(L, i) == LUA_TSTRING {
            return RecordZoneID(zoneName: call.state.string(at: i)!, ownerName: try defaultOwner())
        }
        guard lua_type(L, i) == LUA_TTABLE else {
            throw call.argumentError(position, "zone or zoneID expected, got \(call.typeName(i))")
        }
        var abs = lua_absindex(L, i)
        // A zone table holds its zoneID one level down; no deeper (a cycle would never end).
        let nested = call.field(abs, "zoneID") == LUA_TTABLE
        defer { call.state.pop() }
        if nested { abs = lua_absindex(L, -1) }
        guard let name = try call.stringField(abs, "zoneName") else {
            throw call.argumentError(position, "zoneID needs zoneName")
        }
        return RecordZoneID(zoneName: name, ownerName: try call.stringField(abs, "ownerName") ?? defaultOwner())
    }

}
