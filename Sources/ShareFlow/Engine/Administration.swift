import Foundation
import GRDB

/// A pending invitation, for workflows such as expiring invitations.
public struct Invitation: Sendable {
    public let participantID: String
    public let shareURL: String
    public let shareTitle: String?
    public let lookupInfo: LookupInfo
    /// Seconds since 1970 when the participant was added.
    public let addedAt: Double
}

/// Administration of the directory's shares, as an operator or a plugin acts: not on behalf
/// of a user, so it is not subject to the sharing rules' roles, and every change emits its
/// events.
extension Engine {
    /// Pending invitations added more than `age` seconds ago, oldest first.
    public func pendingInvitations(olderThan age: Double) throws -> [Invitation] {
        let cutoff = Date().timeIntervalSince1970 - age
        return try reading { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT p.participantID, s.url, r.fields, p.lookupKind, p.lookupValue, p.addedAt
                FROM participant p JOIN share s ON s.id = p.shareID JOIN record r ON r.id = s.recordID
                WHERE p.status = 'pending' AND p.addedAt <= ? ORDER BY p.addedAt
                """), arguments: [cutoff]).map { row in
                let fields = (try? JSONDecoder().decode([String: FieldValue].self, from: Data((row[2] as String).utf8))) ?? [:]
                var title: String?
                if case .string(let t) = fields["cloudkit.title"] { title = t }
                return Invitation(participantID: row[0], shareURL: row[1], shareTitle: title,
                                  lookupInfo: LookupInfo(kind: row[3], value: row[4]), addedAt: row[5])
            }
        }
    }

    /// Removes a participant (not the owner) with `reason`; `participant.removed` follows.
    /// Returns false when the participant is unknown or already removed.
    @discardableResult
    public func removeParticipant(_ participantID: String, reason: RemovalReason) throws -> Bool {
        try transaction { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT p.id, p.shareID, s.zoneID, r.name FROM participant p JOIN share s ON s.id = p.shareID
                JOIN record r ON r.id = s.recordID WHERE p.participantID = ?
                """), arguments: [participantID]) else { return false }
            let shareID: Int64 = row[1]
            guard let p = try participantRows(share: shareID, db: db).first(where: { $0.participantID == participantID }),
                  p.status != .removed else { return false }
            guard p.role != .owner else { throw ShareFlowError.invalid("the owner of a share cannot be removed from it") }
            let zone = try zoneRow(id: row[2], db: db)
            let owner = try self.owner(of: zone, db: db)
            let share = try makeShare(shareRow(zone: zone, recordName: row[3], db: db)!, zone: zone, caller: owner, db: db)
            try setStatus(.removed, of: p, share: share, reason: reason, caller: owner, container: zone.container, db: db)
            return true
        }
    }
}
