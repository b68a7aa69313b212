import CLua
import CShareFlowSupport
import ShareFlow

/// A policy request as Lua sees it: a table whose object fields — `share`, `participant`,
/// `metadata` — are made when first read.
///
/// Most policies read only `req.caller` (the allow-list reads its emails). Pushed up front,
/// the three objects were three new userdata with finalizers per decision, and collecting
/// them was most of what a Lua policy cost an accept (SPEC §12). Instead the request is
/// kept, Swift-side, among the state's `RequestTable.kept` most recent ones; a table read
/// later than that raises an error that says so rather than returning a wrong nil.
///
/// ```lua
/// sf.policy("share.accept", function(req)
///   print(req.point, req.caller.email)   -- plain fields
///   print(req.share.url)                 -- made now, then stored in the table
/// end)
/// ```
final class RequestTable {
    /// How many recent requests stay readable.
    static let kept = 64

    private static let lazyFields: [StaticString] = ["share", "participant", "metadata", "proposed", "changes"]
    /// The hidden key holding a table's serial: a light userdata no script can make.
    nonisolated(unsafe) private static let serialKey = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    // Unowned(unsafe): the bindings own this table and outlive it, and a checked unowned
    // reference costs a strong retain and release at each use, several per decision.
    private unowned(unsafe) let b: Bindings
    private var metatable: Int32 = LUA_NOREF
    /// The objects of the most recent requests, by serial modulo `kept`.
    @exclusivity(unchecked) private var recent = [(serial: Int, objects: PolicyRequest.Objects?)](repeating: (0, nil), count: RequestTable.kept)
    @exclusivity(unchecked) private var serial = 0

    init(_ b: Bindings) {
        self.b = b
        let L = b.lua.L
        lua_createtable(L, 0, 2)
        b.lua.push(function: "__index") { [unowned self] call in
            guard lua_type(call.L, 2) == LUA_TSTRING, let key = call.state.string(at: 2),
                let field = RequestTable.lazyFields.firstIndex(where: { $0.description == key })
            else { return 0 }
            try materialize(field, call)
            return 1
        }
        lua_setfield(L, -2, "__index")
        b.lua.push(function: "__pairs") { [unowned self] call in
            for field in RequestTable.lazyFields.indices {
                b.lua.push(static: RequestTable.lazyFields[field])
                if lua_rawget(call.L, 1) == LUA_TNIL { try materialize(field, call) }
                lua_settop(call.L, 1)
            }
            // `next` that steps over the hidden serial, in C: lua_next raises on a key that is
            // not in the table, and nothing may raise from Swift.
            lua_pushlightuserdata(call.L, RequestTable.serialKey)
            lua_pushcclosure(call.L, sf_next_skipping, 1)
            lua_pushvalue(call.L, 1)
            lua_pushnil(call.L)
            return 3
        }
        lua_setfield(L, -2, "__pairs")
        b.lua.push(static: "PolicyRequest")
        lua_setfield(L, -2, "__metatable")
        metatable = luaL_ref(L, clua_registryindex())
    }

    /// Pushes the request's table, reading the request through its address (a copy would
    /// retain each of its objects and strings per decision).
    ///
    /// `b` is this table's bindings, passed borrowed: reached through the stored reference,
    /// the bindings and their state were retained and released around each call made on
    /// them, several atomic operations per decision.
    func push(_ request: UnsafePointer<PolicyRequest>, _ b: Bindings) {
        let L = b.lua.L
        let r = request
        lua_createtable(L, 0, 7)
        r.pointee.point.staticName.withCString { _ = lua_pushstring(L, $0) }
        lua_setfield(L, -2, "point")
        b.setCallerAndContainer(r.pointee.callerID, r.pointer(to: \.caller)!, r.pointer(to: \.container)!)
        b.lua.setField("from", string: r.pointee.from)
        b.lua.setField("to", string: r.pointee.to)
        if r.pointee.point == .shareAccept, r.pointee.objects.oneTimeURL {
            lua_pushboolean(L, 1)
            lua_setfield(L, -2, "oneTimeURL")
        }
        if r.pointee.point == .shareRequestAccess {
            // SPEC §17: who asks and with which URL, made with the request (small, always read).
            b.lua.setField("url", string: r.pointee.objects.url)
            if let requester = r.pointee.objects.requester {
                b.push(requester: requester)
                lua_setfield(L, -2, "requester")
            }
        }
        // The objects are not read here: reading would make them.
        serial += 1
        recent[serial % RequestTable.kept] = (serial, r.pointee.objects)
        lua_pushlightuserdata(L, RequestTable.serialKey)
        lua_pushinteger(L, lua_Integer(serial))
        lua_rawset(L, -3)
        lua_rawgeti(L, clua_registryindex(), lua_Integer(metatable))
        lua_setmetatable(L, -2)
    }

    /// `req.changes` (SPEC §18 P2): lists of participants, `{ participant, from, to }` per
    /// permission changed, and `{ from, to }` per value changed; nil without a proposed share.
    private func push(changes: ShareChanges?) throws {
        let L = b.lua.L
        guard let changes else { return lua_pushnil(L) }
        lua_createtable(L, 0, 6)
        b.pushList(changes.participantsAdded) { b.push(participant: $0) }
        lua_setfield(L, -2, "participantsAdded")
        b.pushList(changes.participantsRemoved) { b.push(participant: $0) }
        lua_setfield(L, -2, "participantsRemoved")
        b.pushList(changes.permissionsChanged) { change in
            lua_createtable(L, 0, 3)
            b.push(participant: change.participant)
            lua_setfield(L, -2, "participant")
            b.lua.setField("from", string: change.from.rawValue)
            b.lua.setField("to", string: change.to.rawValue)
        }
        lua_setfield(L, -2, "permissionsChanged")
        func pair(_ name: StaticString, _ from: String?, _ to: String?) {
            lua_createtable(L, 0, 2)
            b.lua.setField("from", string: from)
            b.lua.setField("to", string: to)
            b.lua.setField(-2, name)
        }
        if let c = changes.publicPermission { pair("publicPermission", c.from?.rawValue, c.to?.rawValue) }
        if let c = changes.title { pair("title", c.from, c.to) }
        if let c = changes.allowsAccessRequests {
            lua_createtable(L, 0, 2)
            if let from = c.from {
                lua_pushboolean(L, from ? 1 : 0)
                lua_setfield(L, -2, "from")
            }
            if let to = c.to {
                lua_pushboolean(L, to ? 1 : 0)
                lua_setfield(L, -2, "to")
            }
            lua_setfield(L, -2, "allowsAccessRequests")
        }
    }

    /// Pushes lazy field `field` of the request table at index 1 and stores it there, so the
    /// next read is a plain one and the object keeps its identity.
    private func materialize(_ field: Int, _ call: LuaCall) throws {
        let L = call.L
        lua_pushlightuserdata(L, RequestTable.serialKey)
        lua_rawget(L, 1)
        let wanted = Int(lua_tointegerx(L, -1, nil))
        lua_settop(L, -2)
        // The serial is a plain integer in the table: a plugin can overwrite it.
        guard wanted >= 1, wanted <= serial, case let (kept, objects?) = recent[wanted % RequestTable.kept], kept == wanted else {
            throw LuaError(
                message:
                    "a policy request's '\(RequestTable.lazyFields[field])' is kept for the \(RequestTable.kept) most recent decisions; read it during the policy call"
            )
        }
        switch field {
        // A store that cannot be read now raises (an outage the policy meets: `runningHook`).
        case 0: b.push(record: try objects.share)
        case 1: b.push(participant: try objects.participant)
        case 2: b.push(metadata: objects.metadata)
        case 3: b.push(record: try objects.proposed)
        default: try push(changes: objects.changes)
        }
        b.lua.push(static: RequestTable.lazyFields[field])
        lua_pushvalue(L, -2)
        lua_rawset(L, 1)
    }
}
