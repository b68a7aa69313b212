import Foundation
import GRDB

/// Shares and their participants.
extension StoreTransaction {
    private static let shareColumns = "s.id, s.recordID, s.zoneID, s.token, s.rootName, s.publicPermission, r.name"

    private func shareRow(_ row: Row) -> ShareRow {
        ShareRow(id: row[0], recordID: row[1], zoneRowID: row[2], token: row[3], rootName: row[4],
                 publicPermission: ParticipantPermission(rawValue: row[5]) ?? .none, recordName: row[6])
    }

    /// The share saved as record `recordName` of the zone.
    package func share(zone: Int64, recordName: String) throws -> ShareRow? {
        // record first (its (zoneID, name) key), then its share: never a scan of the zone's shares.
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM record r CROSS JOIN share s ON s.recordID = r.id WHERE r.zoneID = ? AND r.name = ?"),
                         arguments: [zone, recordName]).map(shareRow)
    }

    package func share(token: String) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.token = ?"),
                         arguments: [token]).map(shareRow)
    }

    package func share(id: Int64) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.id = ?"),
                         arguments: [id]).map(shareRow)
    }

    /// The hierarchy share rooted at record `rootName` of the zone.
    package func share(zone: Int64, rootName: String) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? AND s.rootName = ?"),
                         arguments: [zone, rootName]).map(shareRow)
    }

    package func zoneShare(zone: Int64) throws -> ShareRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? AND s.rootName IS NULL"),
                         arguments: [zone]).map(shareRow)
    }

    package func shares(zone: Int64) throws -> [ShareRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(StoreTransaction.shareColumns) FROM share s JOIN record r ON r.id = s.recordID WHERE s.zoneID = ? ORDER BY s.id"),
                         arguments: [zone]).map(shareRow)
    }

    /// Every share, or those of `container` or of an owner, oldest first (O8).
    package func shareIDs(container: String?, ownerID: Int64?) throws -> [Int64] {
        try Int64.fetchAll(db.cachedStatement(sql: "SELECT s.id FROM share s JOIN zone z ON z.id = s.zoneID WHERE (?1 IS NULL OR z.container = ?1) AND (?2 IS NULL OR z.ownerID = ?2) ORDER BY s.id"),
                           arguments: [container, ownerID])
    }

    /// The root record of some hierarchy share of the zone, if any (R5: a zone share needs an unshared zone).
    package func anySharedRoot(zone: Int64) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT rootName FROM share WHERE zoneID = ? LIMIT 1"), arguments: [zone])
    }

    /// The root of a share below record `name` (by `parent`), if any (R5).
    package func sharedDescendantRoot(zone: Int64, below name: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: """
            WITH RECURSIVE d(name) AS (
                SELECT name FROM record WHERE zoneID = ?1 AND parentName = ?2
                UNION SELECT r.name FROM record r JOIN d ON r.zoneID = ?1 AND r.parentName = d.name)
            SELECT rootName FROM share WHERE zoneID = ?1 AND rootName IN (SELECT name FROM d) LIMIT 1
            """), arguments: [zone, name])
    }

    package func insertShare(record: Int64, zone: Int64, token: String, rootName: String?) throws -> Int64 {
        try db.execute(sql: "INSERT INTO share (recordID, zoneID, token, rootName, publicPermission) VALUES (?, ?, ?, ?, 'none')",
                       arguments: [record, zone, token, rootName])
        return db.lastInsertedRowID
    }

    package func setPublicPermission(_ permission: ParticipantPermission, share: Int64) throws {
        try db.execute(sql: "UPDATE share SET publicPermission = ? WHERE id = ?", arguments: [permission.rawValue, share])
    }

    /// R16, R27: for a caller, whether the share of a URL's `token` exists, is public, has them on it, or
    /// has invitations no account matches — in one statement whose index seeks are the same
    /// whether or not the token is live.
    package func probeShare(token: String, caller: Int64) throws -> ShareProbe {
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT s.id, s.publicPermission, p.id,
                   EXISTS (SELECT 1 FROM participant u WHERE u.shareID = s.id AND u.accountID IS NULL AND u.status = 'pending')
            FROM (SELECT ? AS token) q
            LEFT JOIN share s ON s.token = q.token
            LEFT JOIN participant p ON p.shareID = s.id AND p.accountID = ?
            """), arguments: [token, caller])!
        return ShareProbe(exists: (row[0] as Int64?) != nil,
                          isPublic: (row[1] as String?).map { $0 != ParticipantPermission.none.rawValue } ?? false,
                          isParticipant: (row[2] as Int64?) != nil,
                          hasUnmatchedInvitations: (row[3] as Bool?) == true)
    }

    /// The pending invitations of the share of `token` that no account matches (R16).
    package func unmatchedInvitations(token: String) throws -> [(participantID: String, lookupInfo: LookupInfo)] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT p.participantID, p.lookupKind, p.lookupValue FROM participant p JOIN share s ON s.id = p.shareID
            WHERE s.token = ? AND p.accountID IS NULL AND p.status = 'pending' ORDER BY p.id
            """), arguments: [token]).map { (participantID: $0[0], lookupInfo: LookupInfo(kind: $0[1], value: $0[2])) }
    }

    // MARK: Participants

    private static let participantColumns = "id, participantID, accountID, lookupKind, lookupValue, role, permission, status"

    private func participantRow(_ row: Row) -> ParticipantRow {
        ParticipantRow(id: row[0], participantID: row[1], accountID: row[2], lookup: LookupInfo(kind: row[3], value: row[4]),
                       role: ParticipantRole(rawValue: row[5]) ?? .unknown,
                       permission: ParticipantPermission(rawValue: row[6]) ?? .unknown,
                       status: ParticipantAcceptanceStatus(rawValue: row[7]) ?? .unknown)
    }

    package func participants(share: Int64) throws -> [ParticipantRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(StoreTransaction.participantColumns) FROM participant WHERE shareID = ? ORDER BY id"),
                         arguments: [share]).map(participantRow)
    }

    package func participant(share: Int64, account: Int64) throws -> ParticipantRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(StoreTransaction.participantColumns) FROM participant WHERE shareID = ? AND accountID = ?"),
                         arguments: [share, account]).map(participantRow)
    }

    /// The share a participant (by its participantID) is on.
    package func shareID(ofParticipant participantID: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT shareID FROM participant WHERE participantID = ?"), arguments: [participantID])
    }

    /// R8: participants not removed.
    package func activeParticipantCount(share: Int64) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM participant WHERE shareID = ? AND status != 'removed'"), arguments: [share]) ?? 0
    }

    @discardableResult
    package func insertParticipant(share: Int64, participantID: String, account: Int64?, lookup: LookupInfo, role: ParticipantRole,
                                   permission: ParticipantPermission, status: ParticipantAcceptanceStatus, at time: Double) throws -> Int64 {
        try db.execute(sql: """
            INSERT INTO participant (shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [share, participantID, account, lookup.kind, lookup.value, role.rawValue, permission.rawValue,
                             status.rawValue, time])
        return db.lastInsertedRowID
    }

    /// Puts a participant back on a share as pending (a re-add).
    package func reinstate(participant: Int64, role: ParticipantRole, permission: ParticipantPermission, at time: Double) throws {
        try db.execute(sql: "UPDATE participant SET status = 'pending', role = ?, permission = ?, addedAt = ? WHERE id = ?",
                       arguments: [role.rawValue, permission.rawValue, time, participant])
    }

    package func setPermission(_ permission: ParticipantPermission, participant: Int64) throws {
        try db.execute(sql: "UPDATE participant SET permission = ? WHERE id = ?", arguments: [permission.rawValue, participant])
    }

    package func setRole(_ role: ParticipantRole, participant: Int64) throws {
        try db.execute(sql: "UPDATE participant SET role = ? WHERE id = ?", arguments: [role.rawValue, participant])
    }

    package func setStatus(_ status: ParticipantAcceptanceStatus, participant: Int64) throws {
        try db.execute(sql: "UPDATE participant SET status = ? WHERE id = ?", arguments: [status.rawValue, participant])
    }

    /// A public share's joiner (R10), or a removed one joining again.
    package func acceptAsPublicUser(participant: Int64, permission: ParticipantPermission) throws {
        try db.execute(sql: "UPDATE participant SET status = 'accepted', role = 'publicUser', permission = ? WHERE id = ?",
                       arguments: [permission.rawValue, participant])
    }

    /// Pending invitations added at or before `cutoff`, oldest first.
    package func pendingInvitations(addedBefore cutoff: Double) throws -> [InvitationRow] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT p.participantID, s.token, r.fields, p.lookupKind, p.lookupValue, p.addedAt
            FROM participant p JOIN share s ON s.id = p.shareID JOIN record r ON r.id = s.recordID
            WHERE p.status = 'pending' AND p.addedAt <= ? ORDER BY p.addedAt
            """), arguments: [cutoff]).map { row in
            InvitationRow(participantID: row[0], token: row[1], fields: StoredFields.decode(row[2]),
                          lookup: LookupInfo(kind: row[3], value: row[4]), addedAt: row[5])
        }
    }
}
