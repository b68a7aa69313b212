import Foundation
import GRDB

/// Zones and records.
extension StoreTransaction {
    // MARK: Zones

    package func zoneRowID(container: String, isPublic: Bool, ownerID: Int64, name: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM zone WHERE container = ? AND scope = ? AND ownerID = ? AND name = ?"),
                           arguments: [container, isPublic ? "public" : "private", ownerID, name])
    }

    package func insertZone(container: String, isPublic: Bool, ownerID: Int64, name: String) throws -> Int64 {
        try db.execute(sql: "INSERT INTO zone (container, scope, ownerID, name) VALUES (?, ?, ?, ?)",
                       arguments: [container, isPublic ? "public" : "private", ownerID, name])
        return db.lastInsertedRowID
    }

    /// The zone row `id`; `publicOwnerName` names the owner of public zones.
    package func zone(id: Int64, publicOwnerName: String) throws -> ZoneRow? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT z.container, z.scope, z.ownerID, z.name, a.userRecordID FROM zone z LEFT JOIN account a ON a.id = z.ownerID WHERE z.id = ?
            """), arguments: [id]) else { return nil }
        let isPublic = (row[1] as String) == "public"
        return ZoneRow(id: id, container: row[0], ownerID: row[2],
                       zoneID: RecordZoneID(zoneName: row[3], ownerName: isPublic ? publicOwnerName : row[4]), isPublic: isPublic)
    }

    /// A private zone of `ownerID` in which `participant` is on a share, pending or accepted
    /// (R27: only such a zone exists for them in their shared database).
    package func zoneSharedWith(_ participant: Int64, container: String, ownerID: Int64, name: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT z.id FROM zone z
            WHERE z.container = ? AND z.scope = 'private' AND z.ownerID = ? AND z.name = ?
              AND EXISTS (SELECT 1 FROM share s JOIN participant p ON p.shareID = s.id
                          WHERE s.zoneID = z.id AND p.accountID = ? AND p.status IN ('pending', 'accepted'))
            """), arguments: [container, ownerID, name, participant])
    }

    /// The names of an owner's private zones in a container, oldest first.
    package func privateZoneNames(container: String, ownerID: Int64) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM zone WHERE container = ? AND scope = 'private' AND ownerID = ? ORDER BY id"),
                            arguments: [container, ownerID])
    }

    /// R12: the zones (name, owner's userRecordID) of the shares `account` has accepted in a container.
    package func acceptedZones(of account: Int64, container: String) throws -> [RecordZoneID] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT z.name, a.userRecordID FROM participant p
            JOIN share s ON s.id = p.shareID JOIN zone z ON z.id = s.zoneID JOIN account a ON a.id = z.ownerID
            WHERE p.accountID = ? AND p.status = 'accepted' AND p.role != 'owner' AND z.container = ?
            ORDER BY z.id
            """), arguments: [account, container]).map { RecordZoneID(zoneName: $0[0], ownerName: $0[1]) }
    }

    package func deleteZone(id: Int64) throws {
        try db.execute(sql: "DELETE FROM zone WHERE id = ?", arguments: [id])
    }

    // MARK: Records

    private static let recordColumns = "id, name, type, fields, parentName, tag, modifiedAt, shortGUID"

    private func recordRow(_ row: Row) -> RecordRow {
        RecordRow(id: row[0], name: row[1], type: row[2], fields: StoredFields.decode(row[3]), parentName: row[4],
                  tag: row[5], modifiedAt: row[6], shortGUID: row[7])
    }

    package func record(zone: Int64, name: String) throws -> RecordRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.recordColumns) FROM record WHERE zoneID = ? AND name = ?"),
                         arguments: [zone, name]).map(recordRow)
    }

    /// Every record of `type` in a zone (O7 filters and sorts them).
    package func records(zone: Int64, type: String) throws -> [RecordRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(StoreTransaction.recordColumns) FROM record WHERE zoneID = ? AND type = ?"),
                         arguments: [zone, type]).map(recordRow)
    }

    package func parentName(zone: Int64, name: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT parentName FROM record WHERE zoneID = ? AND name = ?"), arguments: [zone, name])
    }

    /// Each record of the zone and its parent's name.
    package func parentNames(zone: Int64) throws -> [String: String?] {
        var map: [String: String?] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, parentName FROM record WHERE zoneID = ?"), arguments: [zone]) {
            map[row[0]] = row[1] as String?
        }
        return map
    }

    package func insertRecord(zone: Int64, name: String, type: String, fields: StoredFields, parentName: String?, tag: String,
                              by account: Int64, at time: Double) throws -> Int64 {
        try db.execute(sql: """
            INSERT INTO record (zoneID, name, type, fields, parentName, changeTag, tag, createdBy, modifiedBy, modifiedAt)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
            """, arguments: [zone, name, type, fields.json, parentName, tag, account, account, time])
        return db.lastInsertedRowID
    }

    /// Reserves `token` as the record's short GUID (SPEC §13 `createShortGUID`).
    package func setShortGUID(_ token: String, record id: Int64) throws {
        try db.execute(sql: "UPDATE record SET shortGUID = ? WHERE id = ?", arguments: [token, id])
    }

    package func updateRecord(id: Int64, fields: StoredFields, parentName: String?, tag: String, by account: Int64, at time: Double) throws {
        try db.execute(sql: "UPDATE record SET fields = ?, parentName = ?, tag = ?, changeTag = changeTag + 1, modifiedBy = ?, modifiedAt = ? WHERE id = ?",
                       arguments: [fields.json, parentName, tag, account, time, id])
    }

    package func deleteRecord(id: Int64) throws {
        try db.execute(sql: "DELETE FROM record WHERE id = ?", arguments: [id])
    }
}
