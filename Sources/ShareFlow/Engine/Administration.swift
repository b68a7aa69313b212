import Foundation

/// A pending invitation, for workflows such as expiring invitations.
///
/// ```swift
/// for invitation in try engine.pendingInvitations(olderThan: 7 * 86_400) {
///     try engine.removeParticipant(invitation.participantID, reason: .expired)
/// }
/// ```
public struct Invitation: Sendable {
    /// The invited participant's ID on the share, as `removeParticipant(_:reason:)` takes it.
    public let participantID: String
    /// The URL of the share the invitation is to (R6).
    public let shareURL: String
    /// The share's title (`cloudkit.title`); nil when it has none.
    public let shareTitle: String?
    /// How the participant was invited: an email, a phone or a user record ID (R1).
    public let lookupInfo: LookupInfo
    /// Seconds since 1970 when the participant was added.
    public let addedAt: Double
}

/// An open access request across the store (SPEC §17), for review workflows.
///
/// ```swift
/// for open in try engine.accessRequests(olderThan: 14 * 86_400) {
///     print(open.shareURL, open.requester.participantLookupInfo, open.requester.requestedAt)
/// }
/// ```
public struct OpenAccessRequest: Sendable {
    /// The URL of the share asked for (R6).
    public let shareURL: String
    /// The share's title (`cloudkit.title`); nil when it has none.
    public let shareTitle: String?
    /// Who asked, as the owner sees them (R40).
    public let requester: Share.AccessRequester
}

/// Administration of the directory's shares, as an operator or a plugin acts: not on behalf
/// of a user, so it is not subject to the sharing rules' roles, and every change emits its
/// events.
extension Engine {
    /// Pending invitations added more than `age` seconds ago, oldest first.
    public func pendingInvitations(olderThan age: Double) throws -> [Invitation] {
        let cutoff = EngineClock.seconds - age
        return try reading { db in
            try db.pendingInvitations(addedBefore: cutoff).map { row in
                var title: String?
                if case .string(let t) = row.fields["cloudkit.title"] { title = t }
                return Invitation(
                    participantID: row.participantID,
                    shareURL: shareURL(token: row.token),
                    shareTitle: title,
                    lookupInfo: row.lookup,
                    addedAt: row.addedAt
                )
            }
        }
    }

    /// Open access requests made more than `age` seconds ago, oldest first, at most `limit`
    /// (SPEC §17: `sf.admin.accessRequests`).
    public func accessRequests(olderThan age: Double, limit: Int = 1000) throws -> [OpenAccessRequest] {
        let cutoff = EngineClock.seconds - age
        return try reading { db in
            var shares: [Int64: (url: String, title: String?)] = [:]
            return try db.accessRequests(madeBefore: cutoff, limit: max(0, limit)).compactMap { row in
                if shares[row.share] == nil {
                    guard let share = try db.share(id: row.share),
                        let zone = try db.zone(id: share.zoneRowID, publicOwnerName: Engine.publicOwnerName)
                    else { return nil }
                    var title: String?
                    if case .string(let t) = try db.record(zone: zone.id, name: share.recordName)?.fields["cloudkit.title"] { title = t }
                    shares[row.share] = (shareURL(token: share.token), title)
                }
                guard let share = shares[row.share] else { return nil }
                return OpenAccessRequest(shareURL: share.url, shareTitle: share.title, requester: Engine.accessRequester(row))
            }
        }
    }

    /// Removes a participant (not the owner) with `reason`; `participant.removed` follows.
    /// Returns false when the participant is unknown or already removed.
    @discardableResult
    public func removeParticipant(_ participantID: String, reason: RemovalReason) throws -> Bool {
        try transaction { db in
            guard let shareID = try db.shareID(ofParticipant: participantID), let shareRow = try db.share(id: shareID),
                let p = try participantRows(share: shareID, db: db).first(where: { $0.participantID == participantID }),
                p.status != .removed
            else { return false }
            guard p.role != .owner else { throw ShareFlowError.invalid("the owner of a share cannot be removed from it") }
            let zone = try zoneRow(id: shareRow.zoneRowID, db: db)
            let owner = try self.owner(of: zone, db: db)
            let share = try makeShare(shareRow, zone: zone, caller: owner, db: db)
            try setStatus(.removed, of: p, share: share, reason: reason, caller: owner, container: zone.container.identifier, db: db)
            return true
        }
    }
}

/// One share as an audit sees it (O8): every participant, whatever their status.
public struct ShareAudit: Sendable {
    /// One participant of the share, whatever their status.
    public struct Entry: Sendable {
        /// The participant's ID on the share, as `removeParticipant(_:reason:)` takes it.
        public let participantID: String
        /// How the participant was invited (or, for the owner, their primary address).
        public let lookupInfo: LookupInfo
        /// Nil while no account matches the invitation.
        public let userRecordID: String?
        /// Owner, administrator, private or public user (R26, R10).
        public let role: ParticipantRole
        /// What the participant may do with the shared records (R13).
        public let permission: ParticipantPermission
        /// `pending`, `accepted` or `removed`: an audit lists removed participants too (O8).
        public let acceptanceStatus: ParticipantAcceptanceStatus
    }

    /// The share's URL (R6).
    public let url: String
    /// The container the share is in, e.g. `iCloud.com.example.app`.
    public let containerIdentifier: String
    /// Which of the container's data sets the share is in (R32).
    public let environment: CloudEnvironment
    /// The share's own record ID, in its owner's zone.
    public let shareRecordID: RecordID
    /// The share's title (`cloudkit.title`); nil when it has none.
    public let title: String?
    /// The owner's user record ID.
    public let ownerUserRecordID: String
    /// The owner's primary address: their first email, else their first phone, else their user record ID.
    public let ownerLookupInfo: LookupInfo
    /// Nil for a zone share.
    public let rootRecordID: RecordID?
    /// `none` for a private share; otherwise what anyone with the URL gets by accepting (R10).
    public let publicPermission: ParticipantPermission
    /// Every participant, the owner included, whatever their status (O8).
    public let participants: [Entry]
}

extension Engine {
    /// O8: the shares matching every filter given — owned by `owner`, with `participant` on them
    /// (in any status, matched by account or by the address they were invited at), in
    /// `container` — with all their participants. Not on behalf of a user: for audits.
    ///
    /// ```swift
    /// for s in try engine.auditShares(participant: "bob@example.com") { print(s.url, s.participants.count) }
    /// ```
    public func auditShares(owner: String? = nil, participant: String? = nil, container: String? = nil) throws -> [ShareAudit] {
        if let container { try Naming.check(text: container, "container identifier") }
        return try reading { db in
            func account(_ who: String?) throws -> (id: Int64?, lookup: LookupInfo?)? {
                guard let who else { return nil }
                let trimmed = who.trimmingCharacters(in: .whitespaces)
                let lookup =
                    trimmed.hasPrefix("_")
                    ? try LookupInfo(userRecordID: trimmed)
                    : trimmed.contains("@") ? try LookupInfo(emailAddress: trimmed) : try LookupInfo(phoneNumber: trimmed)
                return (try accountID(for: lookup, db: db), lookup)
            }
            let ownerFilter = try account(owner)
            let participantFilter = try account(participant)
            // An owner filter naming no account matches nothing.
            if let ownerFilter, ownerFilter.id == nil { return [] }
            var audits: [ShareAudit] = []
            for shareID in try db.shareIDs(container: container, ownerID: ownerFilter?.id ?? nil) {
                // Each participant with its account, in one statement for the share.
                let rows = try db.participantsWithAccounts(share: shareID)
                if let p = participantFilter {
                    let on = rows.contains { (p.id != nil && $0.row.accountID == p.id) || (p.lookup != nil && $0.row.lookup == p.lookup) }
                    guard on else { continue }
                }
                guard let row = try db.share(id: shareID) else { continue }
                let zone = try zoneRow(id: row.zoneRowID, db: db)
                let ownerAccount = try ownerIdentity(of: zone, db: db)
                var title: String?
                if case .string(let t) = try recordRow(zone: zone, name: row.recordName, db: db)?.fields["cloudkit.title"] { title = t }
                var entries: [ShareAudit.Entry] = []
                for entry in rows {
                    let (r, account) = (entry.row, entry.account)
                    let userRecordID = try r.accountID.map { try (account ?? accountIdentity(id: $0, db: db)).userRecordID }
                    entries.append(
                        ShareAudit.Entry(
                            participantID: r.participantID,
                            lookupInfo: r.lookup,
                            userRecordID: userRecordID,
                            role: r.role,
                            permission: r.permission,
                            acceptanceStatus: r.status
                        )
                    )
                }
                audits.append(
                    ShareAudit(
                        url: shareURL(token: row.token),
                        containerIdentifier: zone.container.identifier,
                        environment: zone.container.environment,
                        shareRecordID: RecordID(recordName: row.recordName, zoneID: zone.zoneID),
                        title: title,
                        ownerUserRecordID: ownerAccount.userRecordID,
                        ownerLookupInfo: ownerAccount.primaryLookup,
                        rootRecordID: row.rootName.map { RecordID(recordName: $0, zoneID: zone.zoneID) },
                        publicPermission: row.publicPermission,
                        participants: entries
                    )
                )
            }
            return audits
        }
    }
}
