import Foundation
import GRDB

/// Zones and records.
extension StoreTransaction {
    // MARK: Zones

    // R32: every query that finds zones names the container's environment too, so nothing of
    // one data set is found from the other.

    package func zoneRowID(container: ContainerID, isPublic: Bool, ownerID: Int64, name: String) throws -> Int64? {
        try fetchOne(
            "SELECT id FROM zone WHERE container = ? AND environment = ? AND scope = ? AND ownerID = ? AND name = ?",
            [container.identifier, container.environment.rawValue, isPublic ? "public" : "private", ownerID, name],
            table: "zone",
            keyAt: 0
        ) { try $0.integer(0, "id") }
    }

    package func insertZone(container: ContainerID, isPublic: Bool, ownerID: Int64, name: String) throws -> Int64 {
        // Never the row of a zone deleted before (SQLite gives the last row's ID again once it
        // is deleted): a change token names its zone by row, and one of the zone deleted would
        // read the new one from the middle rather than be expired (`deleteZone` keeps the mark).
        try lockZoneIDs()
        let id = try insert(
            """
            INSERT INTO zone (id, container, environment, scope, ownerID, name) VALUES (
                MAX(COALESCE((SELECT MAX(id) FROM zone), 0), COALESCE((SELECT CAST(value AS BIGINT) FROM shareflow_meta WHERE key = 'deletedZoneID'), 0)) + 1,
                ?, ?, ?, ?, ?)
            """,
            [container.identifier, container.environment.rawValue, isPublic ? "public" : "private", ownerID, name]
        )
        try logZoneSaved(zone: id, at: EngineClock.seconds)
        return id
    }

    /// Whether a zone is public, from its `scope` column.
    static func isPublic(_ row: StoredRow, _ index: Int) throws -> Bool {
        switch try row.text(index, "scope") {
        case "public": return true
        case "private": return false
        case let other: throw row.damaged("scope", "expected one of public, private, found \(StoredRow.describe(other.databaseValue))")
        }
    }

    /// A zone's columns (`z`) with its owner's user record (`a`, joined on `z.ownerID`).
    static let zoneColumns = "z.id, z.container, z.scope, z.ownerID, z.name, a.userRecordID, a.id, z.environment"

    /// A zone as stored (`zoneColumns` from column `o`); `publicOwnerName` names the owner of
    /// public zones.
    static func zoneRow(_ stored: StoredRow, at o: Int, publicOwnerName: String) throws -> ZoneRow {
        let row = stored.of("zone", keyAt: o)
        let isPublic = try StoreTransaction.isPublic(row, o + 2)
        let ownerID = try row.integer(o + 3, "ownerID")
        let ownerName: String
        if isPublic {
            ownerName = publicOwnerName
        } else {
            // A private zone's owner is an account (no foreign key says so: a public zone's is 0).
            guard try row.optionalInteger(o + 6, "ownerID") != nil else {
                throw row.damaged("ownerID", "no account \(ownerID) exists to own this private zone")
            }
            ownerName = try row.of("account", keyAt: o + 6).text(o + 5, "userRecordID")
        }
        return ZoneRow(
            id: try row.integer(o, "id"),
            container: ContainerID(try row.text(o + 1, "container"), try row.word(o + 7, "environment")),
            ownerID: ownerID,
            zoneID: RecordZoneID(zoneName: try row.text(o + 4, "name"), ownerName: ownerName),
            isPublic: isPublic
        )
    }

    /// The zone row `id`; `publicOwnerName` names the owner of public zones.
    package func zone(id: Int64, publicOwnerName: String) throws -> ZoneRow? {
        let zone = try fetchOne(
            "SELECT \(StoreTransaction.zoneColumns) FROM zone z LEFT JOIN account a ON a.id = z.ownerID WHERE z.id = ?",
            [id],
            table: "zone",
            keyAt: 0
        ) { try StoreTransaction.zoneRow($0, at: 0, publicOwnerName: publicOwnerName) }
        // A write reaching a zone by its row is held to its scope as one finding it by name.
        if let zone { try claim(zone: zone.lockKey) }
        return zone
    }

    /// A private zone of `ownerID` in which `participant` is on a share, pending or accepted
    /// (R27: only such a zone exists for them in their shared database).
    /// R37: only an accepted share opens a zone in the shared database; a pending invitee's is a
    /// stranger's (zoneNotFound) until they accept.
    package func zoneSharedWith(_ participant: Int64, container: ContainerID, ownerID: Int64, name: String) throws -> Int64? {
        try fetchOne(
            """
            SELECT z.id FROM zone z
            WHERE z.container = ? AND z.environment = ? AND z.scope = 'private' AND z.ownerID = ? AND z.name = ?
              AND EXISTS (SELECT 1 FROM share s JOIN participant p ON p.shareID = s.id
                          WHERE s.zoneID = z.id AND p.accountID = ? AND p.status = 'accepted')
            """,
            [container.identifier, container.environment.rawValue, ownerID, name, participant],
            table: "zone",
            keyAt: 0
        ) { try $0.integer(0, "id") }
    }

    /// The names of an owner's private zones in a container, oldest first.
    package func privateZoneNames(container: ContainerID, ownerID: Int64) throws -> [String] {
        try fetchAll(
            "SELECT id, name FROM zone WHERE container = ? AND environment = ? AND scope = 'private' AND ownerID = ? ORDER BY id",
            [container.identifier, container.environment.rawValue, ownerID],
            table: "zone",
            keyAt: 0
        ) { try $0.text(1, "name") }
    }

    /// R12: the zones (name, owner's userRecordID) of the shares `account` has accepted in a container.
    package func acceptedZones(of account: Int64, container: ContainerID) throws -> [RecordZoneID] {
        try fetchAll(
            """
            SELECT DISTINCT z.id, z.name, a.id, a.userRecordID FROM participant p
            JOIN share s ON s.id = p.shareID JOIN zone z ON z.id = s.zoneID JOIN account a ON a.id = z.ownerID
            WHERE p.accountID = ? AND p.status = 'accepted' AND p.role != 'owner' AND z.container = ? AND z.environment = ?
            ORDER BY z.id
            """,
            [account, container.identifier, container.environment.rawValue],
            table: "zone",
            keyAt: 0
        ) { row in
            RecordZoneID(zoneName: try row.text(1, "name"), ownerName: try row.of("account", keyAt: 2).text(3, "userRecordID"))
        }
    }

    package func deleteZone(id: Int64) throws {
        try logZoneDeleted(zone: id, at: EngineClock.seconds)
        try run("DELETE FROM zone WHERE id = ?", [id])
        // The highest row a zone deleted had, which no new zone takes (`insertZone`).
        try run(
            """
            INSERT INTO shareflow_meta (key, value) VALUES ('deletedZoneID', ?1)
            ON CONFLICT (key) DO UPDATE SET value = CAST(MAX(CAST(shareflow_meta.value AS BIGINT), CAST(?1 AS BIGINT)) AS TEXT)
            """,
            [String(id)]
        )
    }

    // MARK: Records

    /// A record's columns (`recordRow` reads them) from `recordSource`: the row `r`, with the
    /// userRecordIDs of its creator and last modifier (R31).
    static let recordColumns =
        "r.id, r.name, r.type, r.fields, r.parentName, r.tag, r.modifiedAt, r.shortGUID, r.createdAt, r.createdBy, c.userRecordID, r.modifiedBy, m.userRecordID"
    static let recordSource = "record r LEFT JOIN account c ON c.id = r.createdBy LEFT JOIN account m ON m.id = r.modifiedBy"
    /// The index of the first column after `recordColumns`.
    static let recordColumnCount = 13

    /// A record as stored (`recordColumns`); `lazyFields`: its fields checked and kept as bytes
    /// where they can be (`FieldsAsRead`), for a row that becomes a `Record` and nothing else.
    static func recordRow(_ row: StoredRow) throws -> RecordRow { try recordRow(row, lazyFields: false) }

    /// `o`: the column `recordColumns` start at.
    static func recordRow(_ row: StoredRow, lazyFields: Bool, at o: Int = 0) throws -> RecordRow {
        let modifiedAt = try row.real(o + 6, "modifiedAt")
        var record = RecordRow(
            id: try row.integer(o, "id"),
            name: try row.text(o + 1, "name"),
            type: try row.text(o + 2, "type"),
            fieldsAsRead: lazyFields ? try row.fieldsAsRead(o + 3, "fields") : .decoded(try row.fields(o + 3, "fields")),
            parentName: try row.optionalText(o + 4, "parentName"),
            tag: try row.text(o + 5, "tag"),
            modifiedAt: modifiedAt,
            shortGUID: try row.optionalText(o + 7, "shortGUID"),
            createdAt: try row.optionalReal(o + 8, "createdAt") ?? modifiedAt,
            createdBy: try row.optionalInteger(o + 9, "createdBy"),
            creatorName: try row.of("account", keyAt: o + 9).optionalText(o + 10, "userRecordID"),
            modifierName: try row.of("account", keyAt: o + 11).optionalText(o + 12, "userRecordID")
        )
        record.storedBytes = row.byteCount(o + 3)
        return record
    }

    /// The record named `name` in `zone`, with the share rooted at it (its record name and
    /// token) read in the same statement: one fetch, one statement.
    package func record(zone: Int64, name: String) throws -> RecordRow? {
        try fetchOne(
            StoreTransaction.recordByNameSQL,
            [zone, name],
            table: "record",
            keyAt: 0,
            StoreTransaction.recordRowWithRootedShare
        )
    }

    /// What a one-record read in the caller's own private database, or the public one, reads
    /// (`Engine.fetchRecord`): the caller's user record name (nil: no such account), the zone by
    /// name (`ownerID`'s: the caller's own, or 0 for public) and the record in it with the share
    /// rooted at it — one statement where it took four, each part nil when absent (issue 48: a
    /// read's fixed cost was its statements). The engine decides from them as `zone(for:)` and
    /// `record` do.
    package func ownRecord(
        caller: Int64,
        container: ContainerID,
        isPublic: Bool,
        ownerID: Int64,
        zoneName: String,
        recordName: String
    ) throws -> OwnRecordRead? {
        try fetchOne(
            StoreTransaction.ownRecordSQL,
            // Values made where their types are known: an array literal of the protocol's
            // existentials cost 4,300 instructions a read here (issue 48, callgrind).
            StoreArguments([
                container.identifier.databaseValue, container.environment.rawValue.databaseValue,
                (isPublic ? "public" : "private").databaseValue, ownerID.databaseValue, zoneName.databaseValue,
                recordName.databaseValue, caller.databaseValue,
            ]),
            table: "account",
            keyAt: 0
        ) { row in
            let userRecordID = try row.text(1, "userRecordID")
            let zone = try row.of("zone", keyAt: 2).optionalInteger(2, "id")
            guard try row.optionalInteger(3, "id") != nil else { return OwnRecordRead(userRecordID: userRecordID, zone: zone, record: nil) }
            // Its fields kept as stored bytes until asked for: the row becomes a `Record` and
            // nothing else (as a change feed's records).
            return OwnRecordRead(
                userRecordID: userRecordID,
                zone: zone,
                record: try StoreTransaction.recordRowWithRootedShare(row, lazyFields: true, at: 3)
            )
        }
    }

    /// What `ownRecord` read. A struct, not a tuple: a tuple holding a `RecordRow?` was copied
    /// through the runtime's generic tuple witnesses, twice a read (issue 48, callgrind).
    package struct OwnRecordRead {
        /// The caller's user record name.
        package let userRecordID: String
        /// The zone's row ID; nil when the caller has no zone of that name.
        package let zone: Int64?
        /// The record with the share rooted at it; nil when the zone has none of that name.
        package let record: RecordRow?
    }

    /// `ownRecord`'s statement: the caller's row ID and user record name, the zone's row ID, the
    /// record and its rooted share, in that order.
    static let ownRecordSQL = StoreStatement(
        """
        SELECT a.id, a.userRecordID, z.id, \(recordColumns), \(rootedShareColumns)
        FROM account a
        LEFT JOIN zone z ON z.container = ? AND z.environment = ? AND z.scope = ? AND z.ownerID = ? AND z.name = ?
        LEFT JOIN record r ON r.zoneID = z.id AND r.name = ?
        LEFT JOIN account c ON c.id = r.createdBy LEFT JOIN account m ON m.id = r.modifiedBy
        \(rootedShareSource) WHERE a.id = ?
        """
    )

    /// `record(zone:name:)`'s statement, made once: built on every call (and hashed for the
    /// statement cache), its text was about 4% of a one-record read (issue 48, callgrind).
    static let recordByNameSQL = StoreStatement(
        """
        SELECT \(recordColumns), \(rootedShareColumns) FROM \(recordSource)
        \(rootedShareSource) WHERE r.zoneID = ? AND r.name = ?
        """
    )

    /// The share rooted at record `r` (its record's name, token and ID), joined by
    /// `rootedShareSource`, read after `recordColumns` by `recordRowWithRootedShare`.
    static let rootedShareColumns = "rsr.name, rs.token, rs.id"
    static let rootedShareSource = "LEFT JOIN share rs ON rs.zoneID = r.zoneID AND rs.rootName = r.name LEFT JOIN record rsr ON rsr.id = rs.recordID"
    /// The columns `recordColumns` and `rootedShareColumns` take.
    static let recordWithRootedShareColumnCount = recordColumnCount + 3

    /// A record as stored with the share rooted at it (`recordColumns`, `rootedShareColumns`).
    static func recordRowWithRootedShare(_ row: StoredRow) throws -> RecordRow { try recordRowWithRootedShare(row, lazyFields: false) }

    static func recordRowWithRootedShare(_ row: StoredRow, lazyFields: Bool, at o: Int = 0) throws -> RecordRow {
        var record = try StoreTransaction.recordRow(o == 0 ? row : row.of("record", keyAt: o), lazyFields: lazyFields, at: o)
        let n = o + StoreTransaction.recordColumnCount
        let share = row.of("share", keyAt: n + 2)
        if let shareName = try share.optionalText(n, "name") {
            record.rootedShare = .share(recordName: shareName, token: try share.text(n + 1, "token"))
        } else {
            record.rootedShare = .none
        }
        return record
    }

    /// Every record of `type` in a zone, handed to `body` until it returns false (O7 filters
    /// and sorts them). A damaged one fails the query, named: a result without it would pass
    /// for every match.
    package func records(zone: Int64, type: String, _ body: (RecordRow) throws -> Bool) throws {
        try forEach(
            "SELECT \(StoreTransaction.recordColumns) FROM \(StoreTransaction.recordSource) WHERE r.zoneID = ? AND r.type = ?",
            [zone, type],
            table: "record",
            keyAt: 0,
            StoreTransaction.recordRow,
            body
        )
    }

    /// An order the store can give a type's records in from an index (R33's total order: the
    /// key, then the record name ascending).
    package enum RecordOrder: Sendable, Equatable {
        case name(ascending: Bool)
        case modification(ascending: Bool)
    }

    /// The records of `type` in the zone in `order`, starting strictly after `after` (the
    /// modification time for `.modification`, and the name), handed to `body` one by one until
    /// it returns false: a query page reads about as many rows as it returns, whatever the
    /// zone's size (SPEC §12).
    package func records(
        zone: Int64,
        type: String,
        order: RecordOrder,
        after: (modifiedAt: Double?, name: String)?,
        _ body: (RecordRow) throws -> Bool
    ) throws {
        var sql = "SELECT \(StoreTransaction.recordColumns) FROM \(StoreTransaction.recordSource) WHERE r.zoneID = ? AND r.type = ?"
        var arguments: StoreArguments = [zone, type]
        switch order {
        case .name(let ascending):
            if let after {
                sql += ascending ? " AND r.name > ?" : " AND r.name < ?"
                arguments += [after.name]
            }
            sql += ascending ? " ORDER BY r.name" : " ORDER BY r.name DESC"
        case .modification(let ascending):
            if let after, let time = after.modifiedAt {
                sql +=
                    ascending
                    ? " AND (r.modifiedAt > ?3 OR (r.modifiedAt = ?3 AND r.name > ?4))"
                    : " AND (r.modifiedAt < ?3 OR (r.modifiedAt = ?3 AND r.name > ?4))"
                arguments += [time, after.name]
            }
            sql += ascending ? " ORDER BY r.modifiedAt, r.name" : " ORDER BY r.modifiedAt DESC, r.name"
        }
        try forEach(sql, arguments, table: "record", keyAt: 0, StoreTransaction.recordRow, body)
    }

    /// Whether record `name` is in the zone (nothing of it read).
    package func recordExists(zone: Int64, name: String) throws -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM record WHERE zoneID = ? AND name = ?)", [zone, name])
    }

    /// Whether some record of the zone names `name` as its parent (existing or not, R34).
    package func hasChildren(zone: Int64, name: String) throws -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM record WHERE zoneID = ? AND parentName = ?)", [zone, name])
    }

    /// Whether `ancestor` is on the parent chain above record `name` (not `name` itself). The
    /// walk is one statement; UNION (not UNION ALL) ends it on a cycle another program left.
    package func isAncestor(_ ancestor: String, of name: String, zone: Int64) throws -> Bool {
        try exists(
            """
            WITH RECURSIVE up(n) AS (
                SELECT parentName FROM record WHERE zoneID = ?1 AND name = ?2
                UNION SELECT r.parentName FROM record r JOIN up ON r.zoneID = ?1 AND r.name = up.n)
            SELECT EXISTS (SELECT 1 FROM up WHERE n = ?3)
            """,
            [zone, name, ancestor]
        )
    }

    /// How far a walk up a parent chain goes in one statement: past it (only a cycle another
    /// program left gets there), the walk stops.
    static let maxChainWalk = 100_000

    /// The parent's name of record `name` of the zone; nil when it has none or does not exist.
    package func parentName(zone: Int64, name: String) throws -> String? {
        try fetchOne("SELECT id, parentName FROM record WHERE zoneID = ? AND name = ?", [zone, name], table: "record", keyAt: 0) {
            try $0.optionalText(1, "parentName")
        } ?? nil
    }

    /// Each record of the zone and its parent's name.
    package func parentNames(zone: Int64) throws -> [String: String?] {
        var map: [String: String?] = [:]
        for (name, parent) in try fetchAll(
            "SELECT id, name, parentName FROM record WHERE zoneID = ?",
            [zone],
            table: "record",
            keyAt: 0,
            {
                (try $0.text(1, "name"), try $0.optionalText(2, "parentName"))
            }
        ) {
            map[name] = parent
        }
        return map
    }

    package func insertRecord(
        zone: Int64,
        name: String,
        type: String,
        fields: StoredFields,
        parentName: String?,
        tag: String,
        by account: Int64,
        at time: Double
    ) throws -> Int64 {
        // The row is written at its position in the owner's feed (public zones have none: 0).
        let seq = try recordPosition(zone: zone)
        let id = try insert(
            """
            INSERT INTO record (zoneID, name, type, fields, parentName, changeTag, tag, createdBy, modifiedBy, modifiedAt, createdAt, seq)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
            """,
            [zone, name, type, fields.json, parentName, tag, account, account, time, time, seq ?? 0]
        )
        // Records already naming it as their parent (R34) come under it: what others see of them may change.
        let viewers = try logRecordSaved(
            zone: zone,
            record: id,
            name: name,
            type: type,
            seq: seq,
            hierarchyChanged: { try hasChildren(zone: zone, name: name) },
            at: time,
            isNew: true
        )
        try noteForSubscriptions(
            zone: zone,
            name: name,
            type: type,
            reason: 1,
            seq: seq,
            writer: account,
            fields: fields.json,
            createdBy: account,
            createdAt: time,
            viewers: viewers,
            at: time
        )
        return id
    }

    /// Reserves `token` as the record's short GUID (SPEC §13 `createShortGUID`).
    package func setShortGUID(_ token: String, record id: Int64) throws {
        try run("UPDATE record SET shortGUID = ? WHERE id = ?", [token, id])
    }

    package func updateRecord(id: Int64, fields: StoredFields, parentName: String?, tag: String, by account: Int64, at time: Double) throws {
        guard let before = try loggedRecord(id) else { return }
        let seq = try recordPosition(zone: before.zone)
        try run(
            """
            UPDATE record SET fields = ?, parentName = ?, tag = ?, changeTag = changeTag + 1, modifiedBy = ?, modifiedAt = ?, seq = COALESCE(?, seq)
            WHERE id = ?
            """,
            [fields.json, parentName, tag, account, time, seq, id]
        )
        let viewers = try logRecordSaved(
            zone: before.zone,
            record: id,
            name: before.name,
            type: before.type,
            seq: seq,
            hierarchyChanged: { before.parentName != parentName },
            at: time
        )
        try noteForSubscriptions(
            zone: before.zone,
            name: before.name,
            type: before.type,
            reason: 2,
            seq: seq,
            writer: account,
            fields: fields.json,
            createdBy: before.createdBy,
            createdAt: before.createdAt,
            viewers: viewers,
            at: time
        )
    }

    package func deleteRecord(id: Int64, by deleter: Int64? = nil) throws {
        guard let before = try loggedRecord(id) else { return }
        // A share's record takes the share and its participants with it (ON DELETE CASCADE):
        // its viewers are looked at again once it is gone.
        let shareViewers = try fetchAll(
            """
            SELECT p.accountID FROM share s JOIN participant p ON p.shareID = s.id
            WHERE s.recordID = ? AND p.role != 'owner' AND p.accountID IS NOT NULL
            """,
            [id],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(0, "accountID") }
        let orphans = try hasChildren(zone: before.zone, name: before.name)
        // A query subscription matches a deleted record by its fields as last saved (SPEC §20 N2).
        let lastSaved =
            try notifyWatched(zone: before.zone)
            ? try fetchOne(
                "SELECT id, fields FROM record WHERE id = ?",
                [id],
                table: "record",
                keyAt: 0,
                { try $0.text(1, "fields") }
            ) : nil
        try run("DELETE FROM record WHERE id = ?", [id])
        let now = EngineClock.seconds
        let logged = try logRecordDeleted(zone: before.zone, name: before.name, type: before.type, at: now)
        try noteForSubscriptions(
            zone: before.zone,
            name: before.name,
            type: before.type,
            reason: 3,
            seq: logged?.seq,
            writer: deleter,
            fields: lastSaved,
            createdBy: before.createdBy,
            createdAt: before.createdAt,
            viewers: logged?.viewers ?? [],
            at: now
        )
        guard let zone = try loggedZone(before.zone) else { return }
        if orphans {
            try relogViewersOnce(zone: zone, at: now)
        } else {
            for viewer in Set(shareViewers).sorted() { try relogViewer(viewer, zone: zone, at: now) }
        }
    }

    /// A record's zone, name, type and parent, as the change log needs them before a change.
    private func loggedRecord(
        _ id: Int64
    ) throws -> (zone: Int64, name: String, type: String, parentName: String?, createdBy: Int64?, createdAt: Double?)? {
        try fetchOne("SELECT id, zoneID, name, type, parentName, createdBy, createdAt FROM record WHERE id = ?", [id], table: "record", keyAt: 0) {
            (
                try $0.integer(1, "zoneID"), try $0.text(2, "name"), try $0.text(3, "type"), try $0.optionalText(4, "parentName"),
                try $0.optionalInteger(5, "createdBy"), try $0.optionalReal(6, "createdAt")
            )
        }
    }
}
