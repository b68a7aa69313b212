import Foundation
import GRDB

/// Shares and their participants.
extension StoreTransaction {
    /// A share's columns and its record's name, as `shareRow` reads them (a query wanting more
    /// names them after these).
    static let shareColumns = "s.id, s.recordID, s.zoneID, s.token, s.rootName, s.publicPermission, r.name, s.allowsAccessRequests"

    /// A share as stored (`shareColumns`: the share's columns, then its record's name).
    static func shareRow(_ row: StoredRow) throws -> ShareRow {
        let recordID = try row.integer(1, "recordID")
        return ShareRow(
            id: try row.integer(0, "id"),
            recordID: recordID,
            zoneRowID: try row.integer(2, "zoneID"),
            token: try row.text(3, "token"),
            rootName: try row.optionalText(4, "rootName"),
            publicPermission: try row.word(5, "publicPermission"),
            recordName: try row.of("record", keyAt: 1).text(6, "name"),
            allowsAccessRequests: try row.integer(7, "allowsAccessRequests") != 0
        )
    }

    /// The one share `condition` (over `share s` and its record `r`, joined as `source`) selects.
    private func oneShare(
        from source: String = "share s JOIN record r ON r.id = s.recordID",
        where condition: String,
        _ arguments: StoreArguments
    ) throws -> ShareRow? {
        try fetchOne(
            "SELECT \(StoreTransaction.shareColumns) FROM \(source) WHERE \(condition)",
            arguments,
            table: "share",
            keyAt: 0,
            StoreTransaction.shareRow
        )
    }

    /// The share saved as record `recordName` of the zone.
    package func share(zone: Int64, recordName: String) throws -> ShareRow? {
        // record first (its (zoneID, name) key), then its share: never a scan of the zone's shares.
        try oneShare(from: "record r CROSS JOIN share s ON s.recordID = r.id", where: "r.zoneID = ? AND r.name = ?", [zone, recordName])
    }

    /// The share with URL token `token` in any environment (tokens are unique store-wide).
    package func share(token: String) throws -> ShareRow? {
        try oneShare(where: "s.token = ?", [token])
    }

    /// The share with URL token `token` in `environment` (R32: a URL of the other one is not found).
    package func share(token: String, environment: CloudEnvironment) throws -> ShareRow? {
        try fetchOne(
            """
            SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID JOIN zone z ON z.id = s.zoneID
            WHERE s.token = ? AND z.environment = ?
            """,
            [token, environment.rawValue],
            table: "share",
            keyAt: 0,
            StoreTransaction.shareRow
        )
    }

    /// The share with URL token `token` in `environment`, with its zone, in one statement
    /// (`share(token:environment:)` then `zone(id:publicOwnerName:)`, read together).
    package func shareWithZone(token: String, environment: CloudEnvironment, publicOwnerName: String) throws -> (share: ShareRow, zone: ZoneRow)? {
        let found = try fetchOne(
            """
            SELECT \(StoreTransaction.shareColumns), \(StoreTransaction.zoneColumns)
            FROM share s JOIN record r ON r.id = s.recordID JOIN zone z ON z.id = s.zoneID LEFT JOIN account a ON a.id = z.ownerID
            WHERE s.token = ? AND z.environment = ?
            """,
            [token, environment.rawValue],
            table: "share",
            keyAt: 0
        ) {
            (try StoreTransaction.shareRow($0), try StoreTransaction.zoneRow($0, at: 8, publicOwnerName: publicOwnerName))
        }
        if let found { try claim(zone: found.1.lockKey) }
        return found
    }

    /// `shareWithZone` and the share's own record (with its creator's and modifier's names),
    /// in the one statement: what a share's metadata is made of (`Engine.makeShare`).
    package func shareWithZoneAndRecord(
        token: String,
        environment: CloudEnvironment,
        publicOwnerName: String
    ) throws -> (share: ShareRow, zone: ZoneRow, record: RecordRow)? {
        let found = try fetchOne(
            StoreTransaction.shareWithZoneAndRecordSQL,
            StoreArguments([token.databaseValue, environment.rawValue.databaseValue]),
            table: "share",
            keyAt: 0
        ) {
            (
                try StoreTransaction.shareRow($0), try StoreTransaction.zoneRow($0, at: 8, publicOwnerName: publicOwnerName),
                try StoreTransaction.recordRowWithRootedShare($0, lazyFields: false, at: 16)
            )
        }
        if let found { try claim(zone: found.1.lockKey) }
        return found
    }

    /// Made once: its text built and hashed on every read was 5% of FetchShareMetadata (issue 48).
    static let shareWithZoneAndRecordSQL = StoreStatement(
        """
        SELECT \(shareColumns), \(zoneColumns), \(recordColumns), \(rootedShareColumns)
        FROM share s JOIN record r ON r.id = s.recordID JOIN zone z ON z.id = s.zoneID LEFT JOIN account a ON a.id = z.ownerID
        LEFT JOIN account c ON c.id = r.createdBy LEFT JOIN account m ON m.id = r.modifiedBy \(rootedShareSource)
        WHERE s.token = ? AND z.environment = ?
        """
    )

    package func share(id: Int64) throws -> ShareRow? {
        try oneShare(where: "s.id = ?", [id])
    }

    /// The hierarchy share rooted at record `rootName` of the zone.
    package func share(zone: Int64, rootName: String) throws -> ShareRow? {
        try oneShare(where: "s.zoneID = ? AND s.rootName = ?", [zone, rootName])
    }

    /// The zone's whole-zone share (a share with no root record).
    package func zoneShare(zone: Int64) throws -> ShareRow? {
        try oneShare(where: "s.zoneID = ? AND s.rootName IS NULL", [zone])
    }

    package func shares(zone: Int64) throws -> [ShareRow] {
        try fetchAll(
            "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? ORDER BY s.id",
            [zone],
            table: "share",
            keyAt: 0,
            StoreTransaction.shareRow
        )
    }

    /// Every share, or those of `container` or of an owner, oldest first (O8).
    package func shareIDs(container: String?, ownerID: Int64?) throws -> [Int64] {
        try fetchAll(
            "SELECT s.id FROM share s JOIN zone z ON z.id = s.zoneID WHERE (CAST(?1 AS TEXT) IS NULL OR z.container = ?1) AND (CAST(?2 AS BIGINT) IS NULL OR z.ownerID = ?2) ORDER BY s.id",
            [container, ownerID],
            table: "share",
            keyAt: 0
        ) { try $0.integer(0, "id") }
    }

    /// The hierarchy share rooted at record `name` or at its nearest ancestor by `parent` (R4),
    /// in one statement: the walk up is SQLite's, not a query per level. A cycle another
    /// program left ends the walk at `maxChainWalk` levels.
    package func shareRooted(atOrAbove name: String, zone: Int64) throws -> ShareRow? {
        try fetchOne(
            """
            WITH RECURSIVE up(n, depth) AS (
                SELECT ?2 COLLATE "binary", 0
                UNION ALL SELECT r.parentName, up.depth + 1 FROM record r JOIN up ON r.zoneID = ?1 AND r.name = up.n
                WHERE r.parentName IS NOT NULL AND up.depth < ?3)
            SELECT \(StoreTransaction.shareColumns) FROM up
            JOIN share s ON s.zoneID = ?1 AND s.rootName = up.n JOIN record r ON r.id = s.recordID
            ORDER BY up.depth LIMIT 1
            """,
            [zone, name, StoreTransaction.maxChainWalk],
            table: "share",
            keyAt: 0,
            StoreTransaction.shareRow
        )
    }

    /// The root record of some hierarchy share of the zone, if any (R5: a zone share needs an unshared zone).
    package func anySharedRoot(zone: Int64) throws -> String? {
        try fetchOne("SELECT id, rootName FROM share WHERE zoneID = ? LIMIT 1", [zone], table: "share", keyAt: 0) {
            try $0.optionalText(1, "rootName")
        } ?? nil
    }

    /// The root of a share below record `name` (by `parent`), if any (R5).
    package func sharedDescendantRoot(zone: Int64, below name: String) throws -> String? {
        // UNION (not UNION ALL) ends the walk on a parent cycle another program left.
        try fetchOne(
            """
            WITH RECURSIVE d(name) AS (
                SELECT name FROM record WHERE zoneID = ?1 AND parentName = ?2
                UNION SELECT r.name FROM record r JOIN d ON r.zoneID = ?1 AND r.parentName = d.name)
            SELECT id, rootName FROM share WHERE zoneID = ?1 AND rootName IN (SELECT name FROM d) LIMIT 1
            """,
            [zone, name],
            table: "share",
            keyAt: 0
        ) { try $0.text(1, "rootName") }
    }

    package func insertShare(record: Int64, zone: Int64, token: String, rootName: String?) throws -> Int64 {
        let id = try insert(
            "INSERT INTO share (recordID, zoneID, token, rootName, publicPermission) VALUES (?, ?, ?, ?, 'none')",
            [record, zone, token, rootName]
        )
        // Not logged again: its record was logged as it was inserted, and no one sees a share
        // before a participant of it is accepted (`insertParticipant`, `setStatus` log that).
        // What this transaction read of the zone for its saves (whether a share has a root)
        // is read again.
        forgetLoggedZones()
        return id
    }

    /// Whether the share takes access requests (R38).
    package func setAllowsAccessRequests(_ allows: Bool, share: Int64) throws {
        try run("UPDATE share SET allowsAccessRequests = ? WHERE id = ?", [allows ? 1 : 0, share])
        try logShareChanged(share, participant: nil)
    }

    package func setPublicPermission(_ permission: ParticipantPermission, share: Int64) throws {
        try run("UPDATE share SET publicPermission = ? WHERE id = ?", [permission.rawValue, share])
        try logShareChanged(share, participant: nil)
    }

    /// R16, R27: for a caller, whether the share of a URL's `token` exists, is public, has them on it, or
    /// has invitations no account matches — in one statement whose index seeks are the same
    /// whether or not the token is live.
    package func probeShare(token: String, environment: CloudEnvironment, caller: Int64) throws -> ShareProbe {
        // Always one row (the left joins keep the token's).
        let probe = try fetchOne(
            """
            SELECT s.id, s.publicPermission, p.id,
                   EXISTS (SELECT 1 FROM participant u WHERE u.shareID = s.id AND u.accountID IS NULL AND u.status = 'pending'
                           AND u.oneTimeToken IS NULL)
            FROM (SELECT ? AS token) q
            LEFT JOIN share s ON s.token = q.token AND EXISTS (SELECT 1 FROM zone z WHERE z.id = s.zoneID AND z.environment = ?)
            LEFT JOIN participant p ON p.shareID = s.id AND p.accountID = ?
            """,
            [token, environment.rawValue, caller],
            table: "share",
            keyAt: 0
        ) { row -> ShareProbe in
            let exists = try row.optionalInteger(0, "id") != nil
            return ShareProbe(
                exists: exists,
                isPublic: try exists && row.word(1, "publicPermission", as: ParticipantPermission.self) != .none,
                isParticipant: try row.optionalInteger(2, "id") != nil,
                hasUnmatchedInvitations: try row.integer(3, "EXISTS") != 0
            )
        }
        return probe ?? ShareProbe(exists: false, isPublic: false, isParticipant: false, hasUnmatchedInvitations: false)
    }

    /// The pending invitations of the share of `token` that no account matches (R16).
    package func unmatchedInvitations(token: String) throws -> [(participantID: String, lookupInfo: LookupInfo)] {
        try fetchAll(
            """
            SELECT p.id, p.participantID, p.lookupKind, p.lookupValue FROM participant p JOIN share s ON s.id = p.shareID
            WHERE s.token = ? AND p.accountID IS NULL AND p.status = 'pending' AND p.oneTimeToken IS NULL ORDER BY p.id
            """,
            [token],
            table: "participant",
            keyAt: 0
        ) {
            (participantID: try $0.text(1, "participantID"), lookupInfo: try $0.lookup(kindAt: 2, "lookupKind", valueAt: 3, "lookupValue"))
        }
    }

    // MARK: Participants

    /// Every participant column `participantRow` reads, in its order; a query reading
    /// participants uses it (the dry run's contents too).
    static let participantColumns =
        "id, participantID, accountID, lookupKind, lookupValue, role, permission, status, approvedRequester, addedAt, oneTimeToken"

    /// A participant as stored (`participantColumns`).
    static func participantRow(_ row: StoredRow) throws -> ParticipantRow {
        ParticipantRow(
            id: try row.integer(0, "id"),
            participantID: try row.text(1, "participantID"),
            accountID: try row.optionalInteger(2, "accountID"),
            lookup: try row.lookup(kindAt: 3, "lookupKind", valueAt: 4, "lookupValue"),
            role: try row.word(5, "role"),
            permission: try row.word(6, "permission"),
            status: try row.word(7, "status"),
            isApprovedRequester: try row.integer(8, "approvedRequester") != 0,
            addedAt: try row.real(9, "addedAt"),
            oneTimeToken: try row.optionalText(10, "oneTimeToken")
        )
    }

    /// A share's participants in the order they were added (their row IDs).
    package func participants(share: Int64) throws -> [ParticipantRow] {
        var rows = try fetchAll(StoreTransaction.participantsSQL, [share], table: "participant", keyAt: 0, StoreTransaction.participantRow)
        StoreTransaction.inOrderAdded(&rows) { $0.id }
        return rows
    }

    static let participantsSQL = StoreStatement("SELECT \(participantColumns) FROM participant WHERE shareID = ?")

    /// Sorts a share's participant rows by row ID. They are read along the index on (shareID,
    /// accountID) and sorted here: `ORDER BY id` made SQLite sort them in a temporary B-tree
    /// holding every column read, most of a 64-participant read's work in SQLite (issue 48,
    /// callgrind); already in order, they are only looked over.
    static func inOrderAdded<Row>(_ rows: inout [Row], by id: (Row) -> Int64) {
        // Looked over by their IDs alone: comparing rows in place copied each whole row.
        let ids = rows.map(id)
        guard zip(ids, ids.dropFirst()).contains(where: { $0 >= $1 }) else { return }
        let rowsAsRead = rows
        rows = ids.indices.sorted { ids[$0] < ids[$1] }.map { rowsAsRead[$0] }
    }

    /// The share's participants, each with what others see of its account: one statement for
    /// the whole share. The account is nil where the row names none, names one the store does
    /// not have, or names one whose row is damaged: only a participant someone is shown needs
    /// its account, and reading it again (`accountIdentity(id:)`) then names the damage, as
    /// before, without failing the read of a share whose other participants are whole.
    package func participantsWithAccounts(share: Int64) throws -> [ParticipantWithAccount] {
        var rows: [ParticipantWithAccount] = try fetchAll(StoreTransaction.participantsWithAccountsSQL, [share], table: "participant", keyAt: 0) {
            ParticipantWithAccount(
                row: try StoreTransaction.participantRow($0),
                account: (try? StoreTransaction.accountIdentityRow($0, at: 11)) ?? nil
            )
        }
        StoreTransaction.inOrderAdded(&rows) { $0.row.id }
        return rows
    }

    static let participantsWithAccountsSQL = StoreStatement(
        """
        SELECT p.id, p.participantID, p.accountID, p.lookupKind, p.lookupValue, p.role, p.permission, p.status,
               p.approvedRequester, p.addedAt, p.oneTimeToken, \(accountIdentityColumns)
        FROM participant p LEFT JOIN account a ON a.id = p.accountID WHERE p.shareID = ?
        """
    )

    package func participant(share: Int64, account: Int64) throws -> ParticipantRow? {
        try fetchOne(
            "SELECT \(StoreTransaction.participantColumns) FROM participant WHERE shareID = ? AND accountID = ?",
            [share, account],
            table: "participant",
            keyAt: 0,
            StoreTransaction.participantRow
        )
    }

    /// The share a participant (by its participantID) is on.
    package func shareID(ofParticipant participantID: String) throws -> Int64? {
        try fetchOne("SELECT id, shareID FROM participant WHERE participantID = ?", [participantID], table: "participant", keyAt: 0) {
            try $0.integer(1, "shareID")
        }
    }

    /// R8: participants not removed.
    package func activeParticipantCount(share: Int64) throws -> Int {
        // COUNT(*) is SQLite's own integer, never a stored value.
        try Int(fetchInteger("SELECT COUNT(*) FROM participant WHERE shareID = ? AND status != 'removed'", [share]) ?? 0)
    }

    /// Whether any share of the store has a participant with this ID.
    package func participantIDExists(_ participantID: String) throws -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM participant WHERE participantID = ?)", [participantID])
    }

    @discardableResult
    package func insertParticipant(
        share: Int64,
        participantID: String,
        account: Int64?,
        lookup: LookupInfo,
        role: ParticipantRole,
        permission: ParticipantPermission,
        status: ParticipantAcceptanceStatus,
        at time: Double
    ) throws -> Int64 {
        let id = try insert(
            """
            INSERT INTO participant (shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                share, participantID, account, lookup.kind, lookup.value, role.rawValue, permission.rawValue,
                status.rawValue, time,
            ]
        )
        // A participant added pending changes no one's view; the share's record, saved in the
        // same transaction (ShareSave), is logged there. One who joins accepted (a public
        // share) comes into view.
        if status == .accepted { try logShareChanged(share, participant: account) }
        return id
    }

    /// Puts a participant back on a share as pending (a re-add).
    package func reinstate(participant: Int64, role: ParticipantRole, permission: ParticipantPermission, at time: Double) throws {
        try run(
            "UPDATE participant SET status = 'pending', role = ?, permission = ?, addedAt = ?, approvedRequester = 0 WHERE id = ?",
            [role.rawValue, permission.rawValue, time, participant]
        )
        try logParticipantChanged(participant)
    }

    package func setPermission(_ permission: ParticipantPermission, participant: Int64) throws {
        try run("UPDATE participant SET permission = ? WHERE id = ?", [permission.rawValue, participant])
        try logParticipantChanged(participant)
    }

    package func setRole(_ role: ParticipantRole, participant: Int64) throws {
        try run("UPDATE participant SET role = ? WHERE id = ?", [role.rawValue, participant])
        try logParticipantChanged(participant)
    }

    package func setStatus(_ status: ParticipantAcceptanceStatus, participant: Int64) throws {
        try run("UPDATE participant SET status = ? WHERE id = ?", [status.rawValue, participant])
        try logParticipantChanged(participant)
    }

    /// A public share's joiner (R10), or a removed one joining again.
    package func acceptAsPublicUser(participant: Int64, permission: ParticipantPermission) throws {
        try run(
            "UPDATE participant SET status = 'accepted', role = 'publicUser', permission = ? WHERE id = ?",
            [permission.rawValue, participant]
        )
        try logParticipantChanged(participant)
    }

    /// Pending invitations added at or before `cutoff`, oldest first.
    package func pendingInvitations(addedBefore cutoff: Double) throws -> [InvitationRow] {
        try fetchAll(
            """
            SELECT p.id, p.participantID, s.id, s.token, r.id, r.fields, p.lookupKind, p.lookupValue, p.addedAt
            FROM participant p JOIN share s ON s.id = p.shareID JOIN record r ON r.id = s.recordID
            WHERE p.status = 'pending' AND p.addedAt <= ? ORDER BY p.addedAt
            """,
            [cutoff],
            table: "participant",
            keyAt: 0
        ) { row in
            InvitationRow(
                participantID: try row.text(1, "participantID"),
                token: try row.of("share", keyAt: 2).text(3, "token"),
                fields: try row.of("record", keyAt: 4).fields(5, "fields"),
                lookup: try row.lookup(kindAt: 6, "lookupKind", valueAt: 7, "lookupValue"),
                addedAt: try row.real(8, "addedAt")
            )
        }
    }
}
