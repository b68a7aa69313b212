import CLua
import Foundation
import ShareFlow

/// `sf.LookupInfo`, `sf.Record`, `sf.Share`, `sf.RecordID`, the subscriptions
/// (`sf.QuerySubscription`, `sf.RecordZoneSubscription`, `sf.DatabaseSubscription`) and R23's
/// value types `sf.Bytes`, `sf.Date`, `sf.Location`, `sf.Reference`. (The operations'
/// constructors come from `Bindings.defineOperations` and the prelude.)
extension ShareFlowModule {
    static func constructors(_ host: ScriptHost, _ b: Bindings) -> [ModuleFunction] {
        [
            (
                "LookupInfo",
                { [unowned b] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: Bindings.lookupKeys)
                    let set = ["emailAddress", "phoneNumber", "userRecordID", "email", "phone"].filter { key in
                        defer { call.state.pop() }
                        return call.field(1, key) != LUA_TNIL
                    }
                    guard set.count == 1 else {
                        throw LuaRaise.message("LookupInfo: give exactly one of emailAddress, phoneNumber, userRecordID (R1)")
                    }
                    let request = try b.lookupRequest(call, 1, position: 1)
                    lua_createtable(call.L, 0, 1)
                    // Kept as given: a malformed value fails its own item in an operation (R1).
                    call.state.push(string: request.info?.value ?? request.given)
                    let kind = request.info?.kind ?? ["email": "emailAddress", "phone": "phoneNumber"][set[0]] ?? set[0]
                    lua_setfield(call.L, -2, kind)
                    b.setMetatable(.lookupInfo)
                    return 1
                }
            ),

            // SPEC §20 N1: a subscription is a value table, saved with db:saveSubscription.
            (
                "QuerySubscription",
                { [unowned b, unowned host] call in
                    try subscriptionConstructor(call, b, host, kind: "query")
                }
            ),
            (
                "RecordZoneSubscription",
                { [unowned b, unowned host] call in
                    try subscriptionConstructor(call, b, host, kind: "zone")
                }
            ),
            (
                "DatabaseSubscription",
                { [unowned b, unowned host] call in
                    // Everything optional: `sf.DatabaseSubscription()` is one with a new ID.
                    try subscriptionConstructor(call, b, host, kind: "database")
                }
            ),

            (
                "Record",
                { [unowned b, unowned host] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: ["recordType", "recordName", "zone", "zoneID", "fields", "parent"])
                    guard let type = try call.stringField(1, "recordType") else {
                        throw call.argumentError(1, "field 'recordType' is required")
                    }
                    let name = try call.stringField(1, "recordName") ?? RandomIdentifier.uuidString()
                    // R24: without a zone, the default zone of the database it is saved to.
                    let zone = try zoneArgument(call, b, host, defaultZone: .default)
                    let record = Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone))
                    if call.field(1, "fields") != LUA_TNIL {
                        try call.table(-1)
                        record.fields = try b.fieldTable(call, -1)
                    }
                    call.state.pop()
                    if call.field(1, "parent") != LUA_TNIL { record.parent = try b.recordID(call, -1, position: 1) }
                    call.state.pop()
                    b.push(record: record)
                    call.state.markWritable(at: -1)
                    return 1
                }
            ),

            (
                "Share",
                { [unowned b, unowned host] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: ["rootRecord", "zone", "zoneID", "title", "publicPermission", "recordName"])
                    let share: Share
                    if call.field(1, "rootRecord") != LUA_TNIL {
                        guard let root = b.record(at: -1), !(root is Share) else {
                            throw call.argumentError(1, "field 'rootRecord' must be a record, got \(call.typeName(-1))")
                        }
                        // A share marks its root record: in a plugin, only a record the plugin made.
                        guard call.state.isWritable(at: -1) else {
                            throw call.argumentError(1, "field 'rootRecord' is read-only in a plugin: it belongs to the caller")
                        }
                        call.state.pop()
                        share = try call.stringField(1, "recordName").map { Share(rootRecord: root, recordName: $0) } ?? Share(rootRecord: root)
                    } else {
                        call.state.pop()
                        share = Share(zoneID: try zoneArgument(call, b, host))
                    }
                    share.title = try call.stringField(1, "title")
                    if call.field(1, "publicPermission") != LUA_TNIL {
                        share.publicPermission = try enumValue(call, -1, ParticipantPermission.self, name: "publicPermission")
                    }
                    call.state.pop()
                    b.push(record: share)
                    call.state.markWritable(at: -1)
                    return 1
                }
            ),

            (
                // R44: the one participant made without an identity (a one-time link's).
                "OneTimeURLParticipant",
                { [unowned b] call in
                    var permission = ParticipantPermission.readOnly
                    if !call.isNil(1) {
                        try call.table(1)
                        try call.checkKeys(1, allowed: ["permission"])
                        if call.field(1, "permission") != LUA_TNIL {
                            permission = try enumValue(call, -1, ParticipantPermission.self, name: "permission")
                        }
                        call.state.pop()
                    }
                    guard permission == .readOnly || permission == .readWrite else {
                        throw call.argumentError(1, "field 'permission' must be readOnly or readWrite, got \(permission.rawValue)")
                    }
                    b.push(participant: Participant.oneTimeURLParticipant(permission: permission))
                    call.state.markWritable(at: -1)
                    return 1
                }
            ),

            (
                "RecordID",
                { [unowned b] call in
                    try call.table(1)
                    b.push(try b.recordID(call, 1, position: 1))
                    return 1
                }
            ),

            // R23's value types: each checked as the engine checks it, so a bad one fails here.
            (
                "Bytes",
                { [unowned b] call in
                    guard lua_type(call.L, 1) == LUA_TSTRING else { throw call.argumentError(1, "string expected, got \(call.typeName(1))") }
                    var len = 0
                    let p = lua_tolstring(call.L, 1, &len)!
                    b.push(FieldValue.bytes(Data(bytes: p, count: len)))
                    return 1
                }
            ),
            (
                "Date",
                { [unowned b] call in
                    let seconds = try call.number(1)
                    guard seconds.isFinite else { throw call.argumentError(1, "seconds must be finite, got \(seconds)") }
                    b.push(FieldValue.date(Date(timeIntervalSince1970: seconds)))
                    return 1
                }
            ),
            (
                "Location",
                { [unowned b] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: Set(["latitude", "longitude", "timestamp"] + Location.Detail.allCases.map(\.rawValue)))
                    guard let lat = try call.numberField(1, "latitude"), let lon = try call.numberField(1, "longitude") else {
                        throw call.argumentError(1, "fields 'latitude' and 'longitude' are required")
                    }
                    // The rest as CloudKit keeps them; the timestamp in seconds, as sf.Date's.
                    var location = Location(latitude: lat, longitude: lon)
                    for detail in Location.Detail.allCases { location[detail] = try call.numberField(1, detail.rawValue) }
                    location.timestamp = try call.numberField(1, "timestamp").map(Date.init(timeIntervalSince1970:))
                    if let problem = location.problem { throw call.argumentError(1, problem) }
                    b.push(FieldValue.location(location))
                    return 1
                }
            ),
            (
                // A value the client encrypted: kept and returned as given, never matched by a
                // query (ShareFlow does not encrypt at rest).
                "Encrypted",
                { [unowned b] call in
                    guard let inner = try b.fieldValue(call, 1, key: "value", position: 1) else {
                        throw call.argumentError(1, "a field value expected, got nil")
                    }
                    let value = FieldValue.encrypted(inner)
                    if let problem = value.problem(key: "value") { throw call.argumentError(1, problem) }
                    b.push(value)
                    return 1
                }
            ),
            (
                // A file for a record (SPEC §19 A2): its bytes, or (trusted states) a file's path.
                "Asset",
                { [unowned b] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: ["data", "path"])
                    let hasData = call.field(1, "data") != LUA_TNIL
                    call.state.pop()
                    let hasPath = call.field(1, "path") != LUA_TNIL
                    call.state.pop()
                    guard hasData != hasPath else { throw call.argumentError(1, "give exactly one of 'data' and 'path'") }
                    b.push(FieldValue.asset(try b.assetValue(call, 1, key: "asset", position: 1)))
                    return 1
                }
            ),
            (
                "Reference",
                { [unowned b] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: ["recordID", "record", "action"])
                    if call.field(1, "recordID") == LUA_TNIL {
                        call.state.pop()
                        call.field(1, "record")
                    }
                    guard lua_type(call.L, -1) != LUA_TNIL else { throw call.argumentError(1, "field 'recordID' is required") }
                    let id = try b.recordID(call, -1, position: 1)
                    call.state.pop()
                    var action = ReferenceAction.none
                    if let name = try call.stringField(1, "action") {
                        guard let a = ReferenceAction(rawValue: name) else {
                            throw call.argumentError(1, "invalid reference action '\(name)' (expected one of: none, deleteSelf)")
                        }
                        action = a
                    }
                    b.push(FieldValue.reference(id, action: action))
                    return 1
                }
            ),
        ]
    }

    /// A subscription of `kind` from the constructor's table (argument 1), pushed as the
    /// table db:saveSubscription takes. Its zone is read as `sf.Record`'s is, but a zone named
    /// without its owner is the saving caller's (as in `sf.RecordID`), not the `--as` user's.
    private static func subscriptionConstructor(_ call: LuaCall, _ b: Bindings, _ host: ScriptHost, kind: String) throws -> Int32 {
        let s = try b.subscription(call, 1, kind: kind) { required in
            let given = [call.field(1, "zone"), call.field(1, "zoneID")].contains { $0 != LUA_TNIL }
            call.state.pop(2)
            guard given || required else { return nil }
            // R24, as sf.RecordID: a zone without its owner is the caller's, whoever saves it.
            return try zoneArgument(call, b, host, owner: RecordZoneID.currentUserName)
        }
        b.push(subscription: s)
        return 1
    }

    /// The `zone`/`zoneID` field of a constructor's table; a zone named without its owner is
    /// `owner`'s, by default the `--as` user's.
    private static func zoneArgument(
        _ call: LuaCall,
        _ b: Bindings,
        _ host: ScriptHost,
        defaultZone: RecordZoneID? = nil,
        owner: String? = nil
    ) throws -> RecordZoneID {
        if call.field(1, "zone") == LUA_TNIL {
            call.state.pop()
            call.field(1, "zoneID")
        }
        defer { call.state.pop() }
        if lua_type(call.L, -1) == LUA_TNIL, let defaultZone { return defaultZone }
        guard lua_type(call.L, -1) != LUA_TNIL else {
            throw call.argumentError(1, "field 'zone' is required (a zone from db:saveZone, or a zoneID)")
        }
        return try b.zoneID(
            call,
            -1,
            position: 1,
            defaultOwner: {
                if let owner { return owner }
                guard let who = host.defaultSession, let a = try b.engine.accounts.find(who) else {
                    throw call.argumentError(1, "a zone given by name needs --as WHO; pass the zone object from db:saveZone instead")
                }
                return a.userRecordID
            }
        )
    }
}
