import Foundation
import ShareFlow

/// `zones/list`, `zones/lookup` and `zones/modify`: the zones of the caller's database.
enum ZoneEndpoints {
    typealias Object = WireFormat.Object

    /// zones/list: every zone the caller sees in the database.
    static func list(_ call: EndpointCall) throws -> Object {
        let db = try call.database(as: try call.reader())
        return ["zones": try db.fetchAllRecordZones().map { zone(db, $0.zoneID) }]
    }

    /// zones/lookup: each zone asked for, or ZONE_NOT_FOUND in its place.
    static func lookup(_ call: EndpointCall) throws -> Object {
        let me = try call.reader()
        let db = try call.database(as: me)
        let known = Set(try db.fetchAllRecordZones().map(\.zoneID))
        guard let zones = try WireFormat.items(call.body["zones"], field: "zones") else { throw CloudKitError.badRequest("zones is required") }
        let asked = try zones.enumerated().map { n, z in
            try WireFormat.zoneID(z, field: "zones[\(n)]", caller: me.userRecordID)!
        }
        return [
            "zones": asked.map { z -> Object in
                known.contains(z)
                    ? zone(db, z)
                    : WireFormat.zoneError(code: "ZONE_NOT_FOUND", reason: "zone \(z.zoneName) does not exist", zoneID: z)
            }
        ]
    }

    /// A zone dictionary: its ID, and for a custom zone its current change token (SPEC §14).
    private static func zone(_ db: CloudDatabase, _ zoneID: RecordZoneID) -> Object {
        var o: Object = ["zoneID": WireFormat.zoneID(zoneID)]
        if let token = ChangeEndpoints.currentToken(db, zoneID) { o["syncToken"] = token }
        return o
    }

    /// zones/modify: `create` and `delete`, each answered on its own.
    static func modify(_ call: EndpointCall) throws -> Object {
        let me = try call.requireUser()
        let db = try call.database(as: me)
        guard let ops = try WireFormat.items(call.body["operations"], field: "operations") else {
            throw CloudKitError.badRequest("operations is required")
        }
        return [
            "zones": try ops.enumerated().map { n, raw -> Object in
                guard let op = raw as? Object, let type = op["operationType"] as? String, let zone = op["zone"] as? Object,
                    let zid = try WireFormat.zoneID(zone["zoneID"], field: "operations[\(n)].zone.zoneID", caller: me.userRecordID)
                else {
                    throw CloudKitError.badRequest("operations[\(n)] needs operationType and zone.zoneID")
                }
                do {
                    // Zones are made and deleted in one's own database only; in the shared
                    // database a delete leaves the zone's shares (the engine's deleteZone).
                    let leaving = type == "delete" && db.databaseScope == .shared
                    guard leaving || zid.ownerName == me.userRecordID || zid.ownerName == RecordZoneID.default.ownerName else {
                        throw ShareFlowError(
                            .permissionFailure,
                            "zone \(zid.zoneName) belongs to \(zid.ownerName); zones are made and deleted by their owner, in their own database"
                        )
                    }
                    switch type {
                    case "create": return ["zoneID": WireFormat.zoneID(try db.saveZone(zid.zoneName).zoneID)]
                    case "delete":
                        try db.deleteZone(zid)
                        return ["zoneID": WireFormat.zoneID(zid), "deleted": true]
                    default: throw CloudKitError.badRequest("operations[\(n)].operationType '\(type)' is not create or delete")
                    }
                } catch let e as ShareFlowError {
                    return try WireFormat.zoneError(e, zoneID: zid)
                }
            }
        ]
    }
}
