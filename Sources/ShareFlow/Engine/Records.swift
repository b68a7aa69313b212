import Foundation
import GRDB

/// Zones and records in the store, and who may see them.
extension Engine {
    static let publicOwnerName = "__defaultOwner__"

    struct ZoneRow {
        let id: Int64
        let container: String
        let ownerID: Int64
        let zoneID: RecordZoneID
        let isPublic: Bool
    }

    /// The stored zone behind `zoneID` in `container` (public or private storage).
    func zoneRow(_ zoneID: RecordZoneID, container: String, isPublic: Bool, create: Bool, db: Database) throws -> ZoneRow? {
        let ownerID: Int64
        if isPublic {
            ownerID = 0
        } else {
            guard let id = try accountID(for: .userRecordID(zoneID.ownerName), db: db) else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneID): no account '\(zoneID.ownerName)' owns it")
            }
            ownerID = id
        }
        let scope = isPublic ? "public" : "private"
        if let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM zone WHERE container = ? AND scope = ? AND ownerID = ? AND name = ?"),
                                       arguments: [container, scope, ownerID, zoneID.zoneName]) {
            return ZoneRow(id: id, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
        }
        // Default zones exist for everyone without being created.
        guard create || zoneID.isDefaultZone else { return nil }
        try db.execute(sql: "INSERT INTO zone (container, scope, ownerID, name) VALUES (?, ?, ?, ?)",
                       arguments: [container, scope, ownerID, zoneID.zoneName])
        return ZoneRow(id: db.lastInsertedRowID, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
    }

    /// The zone a database call addresses, checked against the database's scope (R3).
    func zone(for zoneID: RecordZoneID, in database: CloudDatabase, caller: Account, db: Database) throws -> ZoneRow {
        let container = database.container.containerIdentifier
        switch database.databaseScope {
        case .public:
            guard zoneID.isDefaultZone else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneID.zoneName): the public database has only the default zone")
            }
            return try zoneRow(RecordZoneID(zoneName: zoneID.zoneName, ownerName: Engine.publicOwnerName),
                               container: container, isPublic: true, create: true, db: db)!
        case .private:
            // R24: the current user's name stands for the caller.
            let zoneID = zoneID.ownerName == RecordZoneID.currentUserName
                ? RecordZoneID(zoneName: zoneID.zoneName, ownerName: caller.userRecordID) : zoneID
            guard zoneID.ownerName == caller.userRecordID else {
                throw ShareFlowError.denied("zone \(zoneID) is in another user's private database; \(caller.email ?? caller.userRecordID) may use only their own")
            }
            guard let zone = try zoneRow(zoneID, container: container, isPublic: false, create: false, db: db) else {
                throw ShareFlowError(.zoneNotFound, "zone '\(zoneID.zoneName)' does not exist in the private database of \(caller.email ?? caller.userRecordID); save it first")
            }
            return zone
        case .shared:
            guard zoneID.ownerName != caller.userRecordID else {
                throw ShareFlowError(.invalidArguments, "zone \(zoneID) is the caller's own: use the private database")
            }
            // R27: a zone with no share the caller is in answers exactly as a zone that does not
            // exist, whoever its owner and whatever it holds.
            let notFound = ShareFlowError(.zoneNotFound, "zone \(zoneID) is not shared with \(caller.email ?? caller.userRecordID)")
            guard let ownerID = try accountID(for: .userRecordID(zoneID.ownerName), db: db),
                  let zoneRowID = try Int64.fetchOne(db.cachedStatement(sql: """
                      SELECT z.id FROM zone z
                      WHERE z.container = ? AND z.scope = 'private' AND z.ownerID = ? AND z.name = ?
                        AND EXISTS (SELECT 1 FROM share s JOIN participant p ON p.shareID = s.id
                                    WHERE s.zoneID = z.id AND p.accountID = ? AND p.status IN ('pending', 'accepted'))
                      """), arguments: [container, ownerID, zoneID.zoneName, caller.id]) else { throw notFound }
            return ZoneRow(id: zoneRowID, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: false)
        }
    }

    func saveZone(_ name: String, in database: CloudDatabase) throws -> RecordZone {
        guard database.databaseScope == .private else {
            throw ShareFlowError(.badDatabase, "zones can be created only in the private database, not the \(database.databaseScope.rawValue) one")
        }
        guard !name.isEmpty, name != RecordZoneID.defaultZoneName else {
            throw ShareFlowError.invalid("'\(name)' is not a valid custom zone name")
        }
        try Naming.check(text: name, "zone name")
        return try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zoneID = RecordZoneID(zoneName: name, ownerName: caller.userRecordID)
            _ = try zoneRow(zoneID, container: database.container.containerIdentifier, isPublic: false, create: true, db: db)
            return RecordZone(zoneID: zoneID)
        }
    }

    func fetchAllRecordZones(in database: CloudDatabase) throws -> [RecordZone] {
        try reading { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let container = database.container.containerIdentifier
            switch database.databaseScope {
            case .public:
                return [RecordZone(zoneID: RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: Engine.publicOwnerName))]
            case .private:
                let names = try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM zone WHERE container = ? AND scope = 'private' AND ownerID = ? AND name != ? ORDER BY id"),
                                                arguments: [container, caller.id, RecordZoneID.defaultZoneName])
                return ([RecordZoneID.defaultZoneName] + names).map { RecordZone(zoneID: RecordZoneID(zoneName: $0, ownerName: caller.userRecordID)) }
            case .shared:
                // R12: the zones of the shares this caller has accepted.
                let rows = try Row.fetchAll(db.cachedStatement(sql: """
                    SELECT DISTINCT z.name, a.userRecordID FROM participant p
                    JOIN share s ON s.id = p.shareID JOIN zone z ON z.id = s.zoneID JOIN account a ON a.id = z.ownerID
                    WHERE p.accountID = ? AND p.status = 'accepted' AND p.role != 'owner' AND z.container = ?
                    ORDER BY z.id
                    """), arguments: [caller.id, container])
                return rows.map { RecordZone(zoneID: RecordZoneID(zoneName: $0[0], ownerName: $0[1])) }
            }
        }
    }

    // MARK: Records

    struct RecordRow {
        let id: Int64
        let name: String
        let type: String
        let fields: [String: FieldValue]
        let parentName: String?
        let tag: String
        let modifiedAt: Double
    }

    func recordRow(zone: ZoneRow, name: String, db: Database) throws -> RecordRow? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, type, fields, parentName, tag, modifiedAt FROM record WHERE zoneID = ? AND name = ?"),
                                         arguments: [zone.id, name]) else { return nil }
        let json: String = row["fields"]
        let fields = (try? JSONDecoder().decode([String: FieldValue].self, from: Data(json.utf8))) ?? [:]
        return RecordRow(id: row["id"], name: name, type: row["type"], fields: fields, parentName: row["parentName"],
                         tag: row["tag"], modifiedAt: row["modifiedAt"])
    }

    /// The record as the caller gets it (a `Share` for a share record).
    func makeRecord(_ row: RecordRow, zone: ZoneRow, caller: Account, db: Database) throws -> Record {
        let recordID = RecordID(recordName: row.name, zoneID: zone.zoneID)
        if row.type == Share.recordType, let share = try shareRow(zone: zone, recordName: row.name, db: db) {
            return try makeShare(share, zone: zone, caller: caller, db: db)
        }
        let record = Record(recordType: row.type, recordID: recordID, fields: row.fields,
                            parent: row.parentName.map { RecordID(recordName: $0, zoneID: zone.zoneID) })
        record.recordChangeTag = row.tag
        record.modificationDate = Date(timeIntervalSince1970: row.modifiedAt)
        record.serverFields = row.fields
        record.serverParent = record.parent
        if let shareName = try String.fetchOne(db.cachedStatement(sql: "SELECT r.name FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? AND s.rootName = ?"),
                                               arguments: [zone.id, row.name]) {
            record.share = RecordID(recordName: shareName, zoneID: zone.zoneID)
        }
        return record
    }

    func fetchRecord(_ id: RecordID, in database: CloudDatabase) throws -> Record {
        try reading { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
            guard let row = try recordRow(zone: zone, name: id.recordName, db: db) else {
                throw ShareFlowError.unknown("record \(id) does not exist")
            }
            if database.databaseScope == .shared {
                // R12: only while the caller's participation is accepted; a stranger learns nothing.
                guard let share = try shareCovering(zone: zone, recordName: row.type == Share.recordType ? nil : row.name,
                                                    shareRecordName: row.type == Share.recordType ? row.name : nil, db: db),
                      let me = try participantRow(share: share.id, account: caller.id, db: db) else {
                    throw ShareFlowError.unknown("record \(id) does not exist")
                }
                if case let .denied(_, reason) = SharingRules.decide(.readRecords, role: me.role, permission: me.permission,
                                                                     status: me.status, isPublicShare: share.publicPermission != .none) {
                    // R12: the record is not in this caller's shared database.
                    throw ShareFlowError.unknown("record \(id) is not in the shared database of \(caller.email ?? caller.userRecordID): \(reason)")
                }
            }
            return try makeRecord(row, zone: zone, caller: caller, db: db)
        }
    }

    // MARK: Shares

    struct ShareRow {
        let id: Int64
        let recordID: Int64
        let zoneRowID: Int64
        let url: String
        let rootName: String?
        let publicPermission: ParticipantPermission
        let recordName: String
    }

    static let shareColumns = "s.id, s.recordID, s.zoneID, s.url, s.rootName, s.publicPermission, r.name"

    func shareRow(_ row: Row) -> ShareRow {
        ShareRow(id: row[0], recordID: row[1], zoneRowID: row[2], url: row[3], rootName: row[4],
                 publicPermission: ParticipantPermission(rawValue: row[5]) ?? .none, recordName: row[6])
    }

    func shareRow(zone: ZoneRow, recordName: String, db: Database) throws -> ShareRow? {
        // record first (its (zoneID, name) key), then its share: never a scan of the zone's shares.
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Engine.shareColumns) FROM record r CROSS JOIN share s ON s.recordID = r.id WHERE r.zoneID = ? AND r.name = ?"),
                         arguments: [zone.id, recordName]).map(shareRow)
    }

    func shareRow(url: String, db: Database) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Engine.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.url = ?"),
                         arguments: [url]).map(shareRow)
    }

    func shareRow(rootName: String, zone: ZoneRow, db: Database) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Engine.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? AND s.rootName = ?"),
                         arguments: [zone.id, rootName]).map(shareRow)
    }

    func zoneShareRow(zone: ZoneRow, db: Database) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Engine.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? AND s.rootName IS NULL"),
                         arguments: [zone.id]).map(shareRow)
    }

    func zoneRow(id: Int64, db: Database) throws -> ZoneRow {
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT z.container, z.scope, z.ownerID, z.name, a.userRecordID FROM zone z LEFT JOIN account a ON a.id = z.ownerID WHERE z.id = ?
            """), arguments: [id])!
        let isPublic = (row[1] as String) == "public"
        return ZoneRow(id: id, container: row[0], ownerID: row[2],
                       zoneID: RecordZoneID(zoneName: row[3], ownerName: isPublic ? Engine.publicOwnerName : row[4]), isPublic: isPublic)
    }

    /// The share that covers a record (R4): the zone's share, or the share rooted at the record
    /// or at one of its ancestors by `parent`. With `shareRecordName`, that share itself.
    func shareCovering(zone: ZoneRow, recordName: String?, shareRecordName: String? = nil, db: Database) throws -> ShareRow? {
        if let shareRecordName { return try shareRow(zone: zone, recordName: shareRecordName, db: db) }
        if let zoneShare = try zoneShareRow(zone: zone, db: db) { return zoneShare }
        var name = recordName
        var seen = Set<String>()
        while let current = name, seen.insert(current).inserted {
            if let share = try shareRow(rootName: current, zone: zone, db: db) { return share }
            name = try String.fetchOne(db.cachedStatement(sql: "SELECT parentName FROM record WHERE zoneID = ? AND name = ?"), arguments: [zone.id, current])
        }
        return nil
    }

    struct ParticipantRow {
        let id: Int64
        let participantID: String
        let accountID: Int64?
        let lookup: LookupInfo
        var role: ParticipantRole
        var permission: ParticipantPermission
        var status: ParticipantAcceptanceStatus
    }

    private static let participantColumns = "id, participantID, accountID, lookupKind, lookupValue, role, permission, status"

    private func participantRow(_ row: Row) -> ParticipantRow {
        ParticipantRow(id: row[0], participantID: row[1], accountID: row[2], lookup: LookupInfo(kind: row[3], value: row[4]),
                       role: ParticipantRole(rawValue: row[5]) ?? .unknown,
                       permission: ParticipantPermission(rawValue: row[6]) ?? .unknown,
                       status: ParticipantAcceptanceStatus(rawValue: row[7]) ?? .unknown)
    }

    func participantRows(share: Int64, db: Database) throws -> [ParticipantRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Engine.participantColumns) FROM participant WHERE shareID = ? ORDER BY id"), arguments: [share]).map(participantRow)
    }

    func participantRow(share: Int64, account: Int64, db: Database) throws -> ParticipantRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Engine.participantColumns) FROM participant WHERE shareID = ? AND accountID = ?"),
                         arguments: [share, account]).map(participantRow)
    }

    func participantObject(_ row: ParticipantRow, db: Database) throws -> Participant {
        let identity: UserIdentity
        if let accountID = row.accountID {
            identity = try loadAccount(id: accountID, db: db).identity(lookupInfo: row.lookup)
        } else {
            identity = UserIdentity(userRecordID: nil, lookupInfo: row.lookup, nameComponents: nil, hasiCloudAccount: false)
        }
        return Participant(participantID: row.participantID, userIdentity: identity, role: row.role,
                           permission: row.permission, acceptanceStatus: row.status)
    }

    /// The share as `caller` sees it (R15: the owner and the caller at least).
    func makeShare(_ row: ShareRow, zone: ZoneRow, caller: Account, db: Database) throws -> Share {
        let record = try recordRow(zone: zone, name: row.recordName, db: db)
        let share = Share(recordID: RecordID(recordName: row.recordName, zoneID: zone.zoneID),
                          rootRecordID: row.rootName.map { RecordID(recordName: $0, zoneID: zone.zoneID) })
        share.fields = record?.fields ?? [:]
        share.recordChangeTag = record?.tag
        share.serverFields = share.fields
        share.modificationDate = record.map { Date(timeIntervalSince1970: $0.modifiedAt) }
        share.url = row.url
        share.publicPermission = row.publicPermission
        share.serverPublicPermission = row.publicPermission
        let rows = try participantRows(share: row.id, db: db)
        let mine = rows.first { $0.accountID == caller.id }
        let managing = mine.map { $0.role == .owner || ($0.role == .administrator && $0.status == .accepted) } ?? false
        for p in rows {
            let isMe = p.accountID == caller.id
            let visible = isMe || p.role == .owner
                || (p.status != .removed && (managing || (p.status == .accepted && row.publicPermission == .none && mine?.status == .accepted)))
            guard visible else { continue }
            let object = try participantObject(p, db: db)
            share.participants.append(object)
            if isMe { share.currentUserParticipant = object }
        }
        return share
    }

    /// The owner's account of a share's zone.
    func owner(of zone: ZoneRow, db: Database) throws -> Account { try loadAccount(id: zone.ownerID, db: db) }
}

extension Engine {
    func deleteZone(_ zoneID: RecordZoneID, in database: CloudDatabase) throws {
        guard database.databaseScope == .private else {
            throw ShareFlowError(.badDatabase, "zones can be deleted only in the private database")
        }
        guard !zoneID.isDefaultZone else { throw ShareFlowError.invalid("the default zone cannot be deleted") }
        try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zone = try self.zone(for: zoneID, in: database, caller: caller, db: db)
            let shares = try Int64.fetchAll(db.cachedStatement(sql: "SELECT id FROM share WHERE zoneID = ?"), arguments: [zone.id])
            for id in shares {
                let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT r.name FROM share s JOIN record r ON r.id = s.recordID WHERE s.id = ?"), arguments: [id])!
                try deleteRecord(RecordID(recordName: row[0], zoneID: zoneID), in: database, caller: caller, db: db)
            }
            try db.execute(sql: "DELETE FROM zone WHERE id = ?", arguments: [zone.id])
        }
    }
}

extension CloudDatabase {
    /// Deletes a custom zone with its records; its shares end for every participant.
    public func deleteZone(_ zoneID: RecordZoneID) throws {
        try engine.deleteZone(zoneID, in: self)
    }
}

extension Engine {
    /// Every record of `type` in `zone` (O7 filters and sorts them).
    func recordRows(zone: ZoneRow, type: String, db: Database) throws -> [RecordRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT id, name, type, fields, parentName, tag, modifiedAt FROM record WHERE zoneID = ? AND type = ?"),
                         arguments: [zone.id, type]).map { row in
            let json: String = row["fields"]
            let fields = (try? JSONDecoder().decode([String: FieldValue].self, from: Data(json.utf8))) ?? [:]
            return RecordRow(id: row["id"], name: row["name"], type: row["type"], fields: fields, parentName: row["parentName"],
                             tag: row["tag"], modifiedAt: row["modifiedAt"])
        }
    }

    /// The shares of a zone.
    func sharesOf(zone: ZoneRow, db: Database) throws -> [ShareRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Engine.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ?"),
                         arguments: [zone.id]).map(shareRow)
    }

    /// Each record of the zone and its parent's name.
    func parentNames(zone: ZoneRow, db: Database) throws -> [String: String?] {
        var map: [String: String?] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, parentName FROM record WHERE zoneID = ?"), arguments: [zone.id]) {
            map[row[0]] = row[1] as String?
        }
        return map
    }
}
