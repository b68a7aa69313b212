import Foundation

/// Saving a share: where sharing happens (R3), its creation (R5, R6), publicPermission (R11),
/// a stale copy that would change participants (R35) and the participant limit (R8). The
/// participant list itself is `applyParticipantChanges`'s (ShareParticipantChanges.swift).
extension Engine {
    /// R3: where sharing happens — a custom zone of a private or shared database, never the
    /// public one: the zone, checked as every call into the database checks it.
    func sharingZone(for zoneID: RecordZoneID, in database: CloudDatabase, caller: Account, item: String, db: StoreTransaction) throws -> ZoneRow {
        guard database.databaseScope != .public else {
            throw ShareFlowError(.badDatabase, "\(item): sharing happens only in a private database's custom zone, not the public database (R3)")
        }
        guard !zoneID.isDefaultZone else {
            throw ShareFlowError.invalid("\(item): sharing happens only in a custom zone; \(zoneID.zoneName) is the default zone (R3)")
        }
        return try self.zone(for: zoneID, in: database, caller: caller, db: db)
    }

    func saveShare(
        _ share: Share,
        in database: CloudDatabase,
        caller: Account,
        policy: RecordSavePolicy,
        savedInThisCall: Set<RecordID>,
        db: StoreTransaction
    ) throws -> Share {
        let id = share.recordID
        let item = "share \(share.title.map { "'\($0)'" } ?? Naming.printable(id.recordName))"
        try checkNaming(share, item: item)
        let container = database.container.containerIdentifier
        let zone = try sharingZone(for: id.zoneID, in: database, caller: caller, item: item, db: db)
        var stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
        let created = stored == nil
        // What every policy this save asks sees as `req.share` (SPEC §18 P2).
        let before = shareBeforeSave(stored, zone: zone, caller: caller)
        // The share's change tag before this save wrote anything (R35).
        let tagAtStart = created ? nil : try recordRow(zone: zone, name: id.recordName, db: db)?.tag
        var me: ParticipantRow?
        // What this save writes: the copy's fields and public permission, or (changedKeys) only
        // what the copy changed.
        var fields = share.fields
        var publicPermission = share.publicPermission
        var allowsAccessRequests = share.allowsAccessRequests

        // A policy may call back into the engine and change the store (its own nested write).
        // After one did, the save goes on from the store as it is now: the zone, the share, the
        // caller's place on it and the root are read again and every check made again, so what
        // a policy deleted is zoneNotFound or unknownItem, never a write the store refuses.
        func zoneStillExists() throws {
            guard let now = try db.zone(id: zone.id, publicOwnerName: Engine.publicOwnerName), now.zoneID == zone.zoneID else {
                throw ShareFlowError(.zoneNotFound, "\(item): zone \(zone.zoneID.zoneName) was deleted while the share was being saved (by a policy)")
            }
        }
        /// A policy's question about this save (SPEC §18 P2): the share as stored now (nil
        /// while it is being created), and as the save would leave it, both made only if read.
        func request(_ point: DecisionPoint, participant: Participant? = nil, from: String? = nil, to: String? = nil) -> PolicyRequest {
            Engine.policyRequest(
                point,
                share: share,
                before: before,
                zone: zone,
                asShown: policy != .changedKeys,
                participant: participant,
                caller: caller,
                container: container,
                from: from,
                to: to
            )
        }
        /// The share `before` as stored now, the same share (its URL token) or none.
        func shareStillExists(_ before: ShareRow) throws -> ShareRow {
            try zoneStillExists()
            guard let now = try shareRow(zone: zone, recordName: id.recordName, db: db), now.id == before.id, now.token == before.token else {
                throw ShareFlowError.unknown("\(item) was deleted while it was being saved (by a policy)")
            }
            return now
        }

        /// The checks of a change to the stored share: the caller may make it, the copy is
        /// the server's current one (R21); under changedKeys, what it writes.
        func checkUpdate(_ existing: ShareRow) throws -> ParticipantRow {
            guard let me = try participantRow(share: existing.id, account: caller.id, db: db) else {
                throw ShareFlowError.unknown("\(item) does not exist")
            }
            if me.role != .owner {
                try SharingRules.require(.manageParticipants, of: me, isPublicShare: existing.publicPermission != .none, item: item)
            }
            let record = try recordRow(zone: zone, name: id.recordName, db: db)
            try checkChangeTag(share, existing: record, policy: policy, zone: zone, caller: caller, item: item, db: db)
            // R29, as for any record: the keys the copy changed (allKeys: all it holds).
            fields = policy.fieldsToWrite(of: share, over: record?.fields ?? [:])
            publicPermission = share.publicPermission
            if policy == .changedKeys, share.publicPermission == share.serverPublicPermission {
                publicPermission = existing.publicPermission
            }
            allowsAccessRequests = share.allowsAccessRequests
            if policy == .changedKeys, share.allowsAccessRequests == share.serverAllowsAccessRequests {
                allowsAccessRequests = existing.allowsAccessRequests
            }
            return me
        }

        /// The checks of a new share: its name is free (or a record the copy stands for, R21),
        /// and neither its root nor its zone is shared (R5).
        func checkCreate() throws {
            if let record = try recordRow(zone: zone, name: id.recordName, db: db) {
                // A record of that name that is no share (a share's name is its record's).
                guard policy == .ifServerRecordUnchanged else {
                    throw ShareFlowError.invalid("\(item): record \(id.recordName) exists and is no share")
                }
                try checkChangeTag(share, existing: record, policy: policy, zone: zone, caller: caller, item: item, db: db)
            } else if let tag = share.recordChangeTag, policy == .ifServerRecordUnchanged {
                throw ShareFlowError(.unknownItem, "\(item) no longer exists on the server (this copy has change tag \(tag))")
            }
            try checkNotAlreadyShared(share, zone: zone, savedInThisCall: savedInThisCall, item: item, db: db)
        }

        if var existing = stored {
            me = try checkUpdate(existing)
            if try askPolicies(request(.shareSave), item: item, db: db) {
                existing = try shareStillExists(existing)
                stored = existing
                me = try checkUpdate(existing)
            }
            try db.updateRecord(
                id: existing.recordID,
                fields: try encodeFields(fields, item: item),
                parentName: nil,
                tag: RandomIdentifier.changeTag(),
                by: caller.id,
                at: EngineClock.seconds
            )
        } else {
            guard database.databaseScope == .private else {
                throw ShareFlowError.denied("\(item): only the zone's owner creates shares, in their private database")
            }
            try checkCreate()
            if try askPolicies(request(.shareSave), item: item, db: db) {
                try zoneStillExists()
                if let root = share.rootRecordID, try recordRow(zone: zone, name: root.recordName, db: db) == nil {
                    throw ShareFlowError.unknown(
                        "\(item): its root record \(root.recordName) was deleted while the share was being saved (by a policy)"
                    )
                }
                try checkCreate()
            }
            let now = EngineClock.seconds
            let recordRowID = try db.insertRecord(
                zone: zone.id,
                name: id.recordName,
                type: Share.recordType,
                fields: try encodeFields(fields, item: item),
                parentName: nil,
                tag: RandomIdentifier.changeTag(),
                by: caller.id,
                at: now
            )
            // The root's reserved short GUID, when a client asked for one (SPEC §13), is the token.
            var token = Engine.newShareToken()
            if let rootName = share.rootRecordID?.recordName, let reserved = try recordRow(zone: zone, name: rootName, db: db)?.shortGUID,
                try db.share(token: reserved) == nil
            {
                token = reserved
            }
            let shareID = try db.insertShare(
                record: recordRowID,
                zone: zone.id,
                token: token,
                rootName: share.rootRecordID?.recordName
            )
            try db.insertParticipant(
                share: shareID,
                participantID: RandomIdentifier.uuidString(),
                account: caller.id,
                lookup: caller.primaryLookup,
                role: .owner,
                permission: .readWrite,
                status: .accepted,
                at: now
            )
            stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
            me = try participantRow(share: shareID, account: caller.id, db: db)
        }
        var row = stored!
        var mine = me!
        let isPublic = publicPermission != .none

        // R38: whether people without an invitation may ask to join, changed by the owner or an
        // administrator only (a stale or forged copy from anyone else is refused).
        if allowsAccessRequests != row.allowsAccessRequests {
            try SharingRules.require(.changeAccessRequests, of: mine, isPublicShare: isPublic, item: item)
            try db.setAllowsAccessRequests(allowsAccessRequests, share: row.id)
            row.allowsAccessRequests = allowsAccessRequests
        }

        // R11, only on a real change: changing publicPermission removes pending participants;
        // `none` removes all but the owner.
        if publicPermission != row.publicPermission {
            guard publicPermission != .unknown else {
                throw ShareFlowError.invalid("\(item): publicPermission 'unknown' cannot be set")
            }
            try SharingRules.require(.changePublicPermission, of: mine, isPublicShare: isPublic, item: item)
            if try askPolicies(
                request(.sharePublicPermission, from: row.publicPermission.rawValue, to: publicPermission.rawValue),
                item: item,
                db: db
            ) {
                row = try shareStillExists(row)
                guard let now = try participantRow(share: row.id, account: caller.id, db: db) else {
                    throw ShareFlowError.unknown("\(item) does not exist")
                }
                mine = now
                try SharingRules.require(.changePublicPermission, of: mine, isPublicShare: isPublic, item: item)
            }
            try db.setPublicPermission(publicPermission, share: row.id)
            // R42: a public share is joined by accepting it; its open requests close.
            if isPublic { _ = try db.closeAllAccessRequests(share: row.id) }
            for p in try participantRows(share: row.id, db: db) where p.role != .owner {
                let matches = publicPermission == .none ? p.status != .removed : p.status == .pending
                guard matches else { continue }
                try setStatus(.removed, of: p, share: share, reason: .publicPermissionChanged, caller: caller, container: container, db: db)
            }
            var event = Event(.sharePublicPermissionChanged, caller: caller, container: container)
            event.share = share
            event.from = row.publicPermission.rawValue
            event.to = publicPermission.rawValue
            emit(event)
        }

        // R35: whatever the save policy, a copy whose change tag is not the server's may not
        // change the participants (a list read before someone accepted would take them off).
        let staleServerCopy =
            try created || policy == .ifServerRecordUnchanged || share.recordChangeTag == tagAtStart
            ? nil
            : makeShare(row, zone: zone, caller: caller, db: db)
        /// Who is on the share how, who asks and who is blocked (R35, R41).
        func standing() throws -> [String] { try participantRows(share: row.id, db: db).map(\.state) + accessState(share: row.id, db: db) }
        let participantsBefore = staleServerCopy == nil ? [] : try standing()
        // R41: denials and unblocks first (an identity unblocked here may be added here), blocks
        // after the participant changes (a participant blocked here leaves).
        try applyDenialsAndUnblocks(share, row: row, me: mine, isPublic: isPublic, caller: caller, container: container, item: item, db: db)
        try applyParticipantChanges(
            share,
            row: row,
            zone: zone,
            before: before,
            me: mine,
            publicPermission: publicPermission,
            asShown: policy != .changedKeys,
            caller: caller,
            container: container,
            item: item,
            db: db
        )
        try applyBlocks(share, row: row, me: mine, isPublic: isPublic, caller: caller, container: container, item: item, db: db)
        if let server = staleServerCopy, try standing() != participantsBefore {
            var error = ShareFlowError(
                .serverRecordChanged,
                "\(item) changed on the server since this copy (copy's change tag \(share.recordChangeTag ?? "none"), server's \(tagAtStart ?? "?")); whatever the save policy, a share's participants are changed only from the server's current copy: merge with the error's serverRecord and save again (R35)"
            )
            error.conflict = RecordConflict(server: server, client: share.duplicate(), ancestor: share.ancestor())
            throw error
        }

        // R8
        let count = try db.activeParticipantCount(share: row.id)
        if count > options.maxParticipants {
            throw ShareFlowError(
                .tooManyParticipants,
                "\(item) would have \(count) participants; a share holds at most \(options.maxParticipants), owner included (R8)"
            )
        }

        // A policy consulted during this save may have deleted the share (its own nested write).
        guard let savedRow = try shareRow(zone: zone, recordName: id.recordName, db: db) else {
            throw ShareFlowError(.unknownItem, "\(item) was deleted while it was being saved (by a policy)")
        }
        let fresh = try makeShare(savedRow, zone: zone, caller: caller, db: db)
        var event = Event(.shareSaved, caller: caller, container: container)
        event.share = fresh
        event.created = created
        emit(event)
        emitRecordSaved(fresh, created: created, database: database, caller: caller)
        return fresh
    }
}
