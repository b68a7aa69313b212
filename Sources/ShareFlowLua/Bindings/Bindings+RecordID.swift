import CLua
import Foundation
import ShareFlow

/// `RecordID`: a plain table `{recordName=, zoneID=}` with a metatable; records and shares
/// are accepted where an ID is.
extension Bindings {
    func push(_ recordID: RecordID?) {
        guard let recordID else { return lua_pushnil(lua.L) }
        let L = lua.L
        lua_createtable(L, 0, 2)
        lua.push(string: recordID.recordName)
        lua_setfield(L, -2, "recordName")
        push(recordID.zoneID)
        lua_setfield(L, -2, "zoneID")
        setMetatable(.recordID)
    }

    /// A record ID from a record, a share or an ID table `{recordName=, zoneID=}`.
    func recordID(_ call: LuaCall, _ i: Int32, position: Int32) throws -> RecordID {
        if let record = record(at: i) { return record.recordID }
        guard lua_type(call.L, i) == LUA_TTABLE else {
            throw call.argumentError(position, "record or recordID expected, got \(call.typeName(i))")
        }
        let abs = lua_absindex(call.L, i)
        guard let name = try call.stringField(abs, "recordName") else {
            throw call.argumentError(position, "recordID needs recordName")
        }
        // R24, as sf.Record: no zoneID is the default zone of whichever database the ID is used
        // with; a zoneID without ownerName is the caller's own zone (CKCurrentUserDefaultName).
        switch call.field(abs, "zoneID") {
        case LUA_TNIL:
            call.state.pop()
            return RecordID(recordName: name, zoneID: .default)
        case LUA_TTABLE, LUA_TSTRING:
            defer { call.state.pop() }
            let zone = try zoneID(call, -1, position: position, defaultOwner: { RecordZoneID.currentUserName })
            return RecordID(recordName: name, zoneID: zone)
        default:
            let got = call.typeName(-1)
            call.state.pop()
            throw call.argumentError(position, "recordID's zoneID must be a zone or zoneID table, got \(got)")
        }
    }
}
