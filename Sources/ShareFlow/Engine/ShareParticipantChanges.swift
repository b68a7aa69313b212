import Foundation

/// The participant changes a share save makes: adds, permission and role changes, removals
/// (R9, R26), and the status changes every sharing path uses (`setStatus`).
extension Engine {
    /// R9, R26: makes the share's participants those the saved object shows (`asShown`), or
    /// (changedKeys) applies only the adds and removes made on the object. Participants R11
    /// just took off stay off unless this save adds them.
    func applyParticipantChanges(
        _ share: Share,
        row: ShareRow,
        zone: ZoneRow,
        before: PolicyRequest.Objects,
        me: ParticipantRow,
        publicPermission: ParticipantPermission,
        asShown: Bool,
        caller: Account,
        container: String,
        item: String,
        db: StoreTransaction
    ) throws {
        var rows = try participantRows(share: row.id, db: db)
        func requireManage() throws {
            try SharingRules.require(.manageParticipants, of: me, isPublicShare: publicPermission != .none, item: item)
        }
        var matchedRows = Set<Int64>()
        for p in share.participants {
            var matched: Int64?
            if let userRecordID = p.userIdentity.userRecordID { matched = try accountID(for: .userRecordID(userRecordID), db: db) }
            let byID = rows.first(where: { $0.participantID == p.participantID })
            // A one-time link's participant is nobody yet: found by its ID alone (R44).
            var existing =
                p.isOneTimeURLParticipant
                ? byID : byID ?? rows.first(where: { isSamePerson($0, accountID: matched, lookup: p.userIdentity.lookupInfo) })
            if let existing { matchedRows.insert(existing.id) }
            if let existing, existing.role == .owner { continue }
            guard p.role != .owner else {
                throw ShareFlowError.invalid("\(item): \(p.userIdentity) cannot be made an owner; a share has one owner (R26)")
            }
            guard p.permission != .unknown else {
                throw ShareFlowError.invalid("\(item): participant \(p.userIdentity) needs a permission other than 'unknown'")
            }
            let explicitlyAdded = share.addedParticipantIDs.contains(p.participantID)
            // Removed on the server (by R11 in this save, or since this object was read under
            // changedKeys or allKeys): only an explicit add brings them back.
            if let existing, existing.status == .removed, !explicitlyAdded { continue }
            if let existing, existing.status != .removed {
                try changeRole(of: existing, to: p, share: share, me: me, caller: caller, container: container, item: item, db: db)
                guard existing.permission != p.permission else { continue }
                try requireManage()
                try db.setPermission(p.permission, participant: existing.id)
                var event = Event(.participantPermissionChanged, caller: caller, container: container)
                event.share = share
                event.participant = p
                event.from = existing.permission.rawValue
                event.to = p.permission.rawValue
                emit(event)
                continue
            }
            // A new participant, or a removed one added again.
            try requireManage()
            guard publicPermission == .none else {
                throw ShareFlowError.invalid(
                    "\(item): participants can be added only while publicPermission is none; it is \(publicPermission.rawValue) (R9)"
                )
            }
            let role = try newRole(for: p, me: me, item: item)
            // R41: a policy asked about this add sees whether it approves a request.
            if let account = matched ?? existing?.accountID { p.isApprovedRequester = try db.hasAccessRequest(share: row.id, account: account) }
            if try askPolicies(
                Engine.policyRequest(
                    .participantAdd,
                    share: share,
                    before: before,
                    zone: zone,
                    asShown: asShown,
                    participant: p,
                    caller: caller,
                    container: container
                ),
                item: item,
                db: db
            ) {
                // A policy called back into the engine and changed the store: the add goes on
                // from the share as it is now, or fails as ShareFlow says it.
                guard let now = try db.share(id: row.id), now.token == row.token else {
                    throw ShareFlowError.unknown("\(item) was deleted while it was being saved (by a policy)")
                }
                guard let meNow = try participantRow(share: row.id, account: caller.id, db: db) else {
                    throw ShareFlowError.unknown("\(item) does not exist")
                }
                try SharingRules.require(.manageParticipants, of: meNow, isPublicShare: now.publicPermission != .none, item: item)
                guard now.publicPermission == .none else {
                    throw ShareFlowError.invalid(
                        "\(item): participants can be added only while publicPermission is none; it is \(now.publicPermission.rawValue) (R9)"
                    )
                }
                rows = try participantRows(share: row.id, db: db)
                existing =
                    rows.first(where: { $0.participantID == p.participantID })
                    ?? (p.isOneTimeURLParticipant
                        ? nil : rows.first(where: { isSamePerson($0, accountID: matched, lookup: p.userIdentity.lookupInfo) }))
                if let existing, existing.status != .removed {
                    // The policy put them on the share itself.
                    matchedRows.insert(existing.id)
                    continue
                }
            }
            let lookup = p.userIdentity.lookupInfo ?? .userRecordID(p.userIdentity.userRecordID ?? "")
            // R42: a blocked identity is unblocked before it is added (a one-time link has none yet).
            if !p.isOneTimeURLParticipant, try db.isBlocked(share: row.id, account: matched ?? existing?.accountID, lookup: lookup) {
                throw ShareFlowError.invalid(
                    "\(item): \(p.userIdentity) is blocked on this share; take them off its blocked identities first (unblockIdentities, R42)"
                )
            }
            let added: Int64
            if let existing {
                try db.reinstate(participant: existing.id, role: role, permission: p.permission, at: EngineClock.seconds)
                added = existing.id
                // An unclaimed link added again is a new link: the old URL, perhaps leaked, ends (R44).
                if existing.oneTimeToken != nil, existing.accountID == nil {
                    try db.setOneTimeToken(Engine.newShareToken(), participant: added)
                }
            } else {
                // A participant ID names one place on one share: an object already placed on
                // another share (a copy of its participants) gets a fresh one here.
                let participantID = try db.participantIDExists(p.participantID) ? RandomIdentifier.uuidString() : p.participantID
                added = try db.insertParticipant(
                    share: row.id,
                    participantID: participantID,
                    account: matched,
                    lookup: lookup,
                    role: role,
                    permission: p.permission,
                    status: .pending,
                    at: EngineClock.seconds
                )
                matchedRows.insert(added)
                // R44: the link's own token, as unguessable as a share's (R6).
                if p.isOneTimeURLParticipant { try db.setOneTimeToken(Engine.newShareToken(), participant: added) }
            }
            // R41: adding someone who asked approves their request: it closes, and they are
            // an approved requester (pending, as any invitee).
            let approved = try (matched ?? existing?.accountID).map { try db.closeAccessRequest(share: row.id, account: $0) } ?? false
            if approved { try db.setApprovedRequester(participant: added) }
            rows = try participantRows(share: row.id, db: db)
            p.acceptanceStatus = .pending
            p.role = role
            p.isApprovedRequester = approved
            var event = Event(.participantAdded, caller: caller, container: container)
            event.share = share
            event.participant = p
            event.approvedRequester = approved
            emit(event)
        }
        // Off the share: as shown, whoever the object no longer lists; under changedKeys, whom
        // the object removed.
        let leaving =
            asShown
            ? rows.filter {
                !matchedRows.contains($0.id) && $0.status != .removed
                    && ($0.role != .owner || share.removedParticipantIDs.contains($0.participantID))
            }
            : rows.filter { share.removedParticipantIDs.contains($0.participantID) && $0.status != .removed }
        for r in leaving {
            guard r.role != .owner else { throw ShareFlowError.invalid("\(item): the owner cannot be removed from their own share") }
            try requireManage()
            if r.role == .administrator && me.role != .owner {
                throw ShareFlowError.denied("\(item): only the owner removes an administrator (R26)")
            }
            try setStatus(.removed, of: r, share: share, reason: .removedByOwner, caller: caller, container: container, db: db)
        }
    }

    /// R26: the role a new participant gets: privateUser, or administrator when the owner says so.
    private func newRole(for p: Participant, me: ParticipantRow, item: String) throws -> ParticipantRole {
        switch p.role {
        case .administrator:
            guard me.role == .owner else {
                throw ShareFlowError.denied("\(item): only the owner makes someone an administrator (R26)")
            }
            return .administrator
        case .privateUser, .unknown: return .privateUser
        case .owner, .publicUser:
            throw ShareFlowError.invalid(
                "\(item): a participant added by the owner is a privateUser or an administrator, not \(p.role.rawValue) (R26)"
            )
        }
    }

    /// R26: the owner makes a private participant an administrator, or back.
    private func changeRole(
        of row: ParticipantRow,
        to p: Participant,
        share: Share,
        me: ParticipantRow,
        caller: Account,
        container: String,
        item: String,
        db: StoreTransaction
    ) throws {
        guard p.role != row.role, p.role != .unknown else { return }
        let movable: Set<ParticipantRole> = [.administrator, .privateUser]
        guard movable.contains(p.role), movable.contains(row.role) else {
            throw ShareFlowError.invalid(
                "\(item): the role of \(p.userIdentity) cannot change from \(row.role.rawValue) to \(p.role.rawValue); only privateUser and administrator swap (R26)"
            )
        }
        guard me.role == .owner else {
            throw ShareFlowError.denied("\(item): only the owner changes a participant's role (R26)")
        }
        try db.setRole(p.role, participant: row.id)
        var event = Event(.participantRoleChanged, caller: caller, container: container)
        event.share = share
        event.participant = p
        event.from = row.role.rawValue
        event.to = p.role.rawValue
        emit(event)
    }

    private func isSamePerson(_ row: ParticipantRow, accountID: Int64?, lookup: LookupInfo?) -> Bool {
        if let accountID, row.accountID == accountID { return true }
        return row.accountID == nil && lookup != nil && lookup == row.lookup
    }

    /// Changes a participant's status; a removal emits `participant.removed` with its reason.
    func setStatus(
        _ status: ParticipantAcceptanceStatus,
        of row: ParticipantRow,
        share: Share?,
        reason: RemovalReason?,
        caller: Account,
        container: String,
        db: StoreTransaction
    ) throws {
        try db.setStatus(status, participant: row.id)
        guard status == .removed, let reason else { return }
        var event = Event(.participantRemoved, caller: caller, container: container)
        event.share = share
        var updated = row
        updated.status = .removed
        event.participant = try participantObject(updated, db: db)
        event.reason = reason.rawValue
        emit(event)
    }
}
