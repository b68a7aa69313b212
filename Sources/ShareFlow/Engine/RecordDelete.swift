import Foundation

/// Deleting records and shares: a participant leaves a share (R14), the owner ends it (R14),
/// deleting a hierarchy's root ends its share (R13); the caller's right comes before the
/// change tag (R21, R37).
extension Engine {
    func deleteRecord(_ id: RecordID, in database: CloudDatabase, caller: Account, ifTag: String? = nil, db: StoreTransaction) throws {
        let item = "record \(id.recordName)"
        /// R21 for a delete that names the copy it deletes: checked once the caller may delete
        /// (R37: nothing is told about a record they may not touch).
        func checkTag(_ row: RecordRow) throws {
            guard let ifTag, ifTag != row.tag else { return }
            let copy = ifTag.isEmpty ? "no change tag given" : "change tag \(ifTag)"
            throw ShareFlowError(
                .serverRecordChanged,
                "\(item) changed on the server since this copy (\(copy), server's \(row.tag)); a delete names the current recordChangeTag: fetch it and delete again (R21)"
            )
        }
        let container = database.container.containerIdentifier
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        // R37: in the shared database a record outside the caller's shares answers exactly as a
        // missing one: one message for both.
        let missing = ShareFlowError.unknown("\(item) does not exist in zone \(id.zoneID)")
        guard let row = try recordRow(zone: zone, name: id.recordName, db: db) else { throw missing }
        if row.type == Share.recordType, let share = try shareRow(zone: zone, recordName: row.name, db: db) {
            if database.databaseScope == .private {
                try checkTag(row)
                try endShare(share, zone: zone, caller: caller, database: database, db: db)
                return
            }
            // R14: a participant deleting the share leaves it; it stays for everyone else.
            guard let me = try participantRow(share: share.id, account: caller.id, db: db) else { throw missing }
            try SharingRules.require(.deleteShare, of: me, isPublicShare: share.publicPermission != .none, item: "share \(row.name)")
            try checkTag(row)
            let shareObject = try makeShare(share, zone: zone, caller: caller, db: db)
            try setStatus(.removed, of: me, share: shareObject, reason: .left, caller: caller, container: container, db: db)
            return
        }
        if database.databaseScope == .public {
            try Engine.requireCreator(row, caller: caller, item: item)
        }
        if database.databaseScope == .shared {
            guard let covering = try shareCovering(zone: zone, recordName: row.name, db: db),
                let me = try participantRow(share: covering.id, account: caller.id, db: db),
                SharingRules.decide(.readRecords, of: me, isPublicShare: covering.publicPermission != .none).isAllowed
            else {
                throw missing
            }
            if covering.rootName == row.name {
                try SharingRules.require(.deleteRootRecord, of: me, isPublicShare: covering.publicPermission != .none, item: item)
            }
            try SharingRules.require(.modifyRecords, of: me, isPublicShare: covering.publicPermission != .none, item: item)
        }
        try checkTag(row)
        // R13: deleting a hierarchy's root deletes its share.
        if let rooted = try shareRow(rootName: row.name, zone: zone, db: db) {
            try endShare(rooted, zone: zone, caller: caller, database: database, db: db)
        }
        try db.deleteRecord(id: row.id, by: caller.id)
        emitRecordDeleted(id, type: row.type, database: database, caller: caller)
    }

    /// R14: the owner deleting a share ends it for everyone.
    private func endShare(_ share: ShareRow, zone: ZoneRow, caller: Account, database: CloudDatabase, db: StoreTransaction) throws {
        let container = database.container.containerIdentifier
        let object = try makeShare(share, zone: zone, caller: caller, db: db)
        for p in try participantRows(share: share.id, db: db) where p.role != .owner && p.status != .removed {
            try setStatus(.removed, of: p, share: object, reason: .shareDeleted, caller: caller, container: container, db: db)
        }
        try db.deleteRecord(id: share.recordID, by: caller.id)
        var event = Event(.shareDeleted, caller: caller, container: container)
        event.share = object
        emit(event)
        emitRecordDeleted(object.recordID, type: Share.recordType, database: database, caller: caller)
    }
}
