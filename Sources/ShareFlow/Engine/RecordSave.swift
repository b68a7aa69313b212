import Foundation

/// Saving a plain record: who may write where (R13, R30, R37), its type, its parent (R25,
/// R34), its change tag (R21), what it writes (R29) and that shares still never nest (R5).
extension Engine {
    func saveRecord(
        _ record: Record,
        in database: CloudDatabase,
        caller: Account,
        policy: RecordSavePolicy,
        savedInThisCall: Set<RecordID>,
        db: StoreTransaction
    ) throws -> Record {
        let id = record.recordID
        let item = "record \(Naming.printable(id.recordName))"
        try checkNaming(record, item: item)
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        let existing = try recordRow(zone: zone, name: id.recordName, db: db)
        var parent = record.parent
        if policy == .changedKeys, let existing, !record.parentChanged {
            parent = existing.parentName.map { RecordID(recordName: $0, zoneID: id.zoneID) }
        }
        let parentMoved = parent?.recordName != existing?.parentName
        if database.databaseScope == .shared {
            // R37: what the caller may write is decided before anything about the record is
            // looked at (its type, its parent's existence): a record outside every share they
            // write answers exactly as a missing one whose parent is outside.
            // R13: a participant saves into a share that covers the record (or its new parent).
            let covering =
                existing != nil
                ? try shareCovering(zone: zone, recordName: id.recordName, db: db)
                : try shareCovering(zone: zone, recordName: parent?.recordName, db: db)
            guard let covering, let me = try participantRow(share: covering.id, account: caller.id, db: db) else {
                throw ShareFlowError.denied("\(item) is not in a share \(caller.email ?? caller.userRecordID) participates in")
            }
            try SharingRules.require(.modifyRecords, of: me, isPublicShare: covering.publicPermission != .none, item: item)
            if let parent, parentMoved,
                try shareCovering(zone: zone, recordName: parent.recordName, db: db)?.id != covering.id
            {
                throw ShareFlowError.denied("\(item): a participant cannot move a record out of the share (R13)")
            }
            // Taking the parent away moves the record out of a hierarchy share as surely (only
            // the share's root has no parent in it).
            if parent == nil, existing?.parentName != nil, let root = covering.rootName, root != id.recordName {
                throw ShareFlowError.denied("\(item): a participant cannot move a record out of the share (R13)")
            }
            // R34: records whose parent was deleted left the share; a participant making that
            // name again would bring them back in.
            if existing == nil, try db.hasChildren(zone: zone.id, name: id.recordName) {
                throw ShareFlowError.denied("\(item) cannot be made by a participant: records outside the share name it as their parent (R13, R34)")
            }
        }
        if record.recordType == Share.recordType || existing?.type == Share.recordType {
            throw ShareFlowError.invalid("\(item): records of type cloudkit.share are saved as Share objects")
        }
        if let existing, existing.type != record.recordType {
            throw ShareFlowError.invalid("\(item) has type \(existing.type); it cannot be saved as \(record.recordType)")
        }
        // What this save writes (R29): the keys the copy changed (allKeys: every key it holds)
        // over the server's record; a key it never held, fetched or not, stays.
        var fields = policy.fieldsToWrite(of: record, over: existing?.fields)
        if fields.values.contains(where: \.holdsAsset) {
            fields = try resolveAssets(fields, existing: existing?.fields, record: id, in: database, caller: caller, item: item, db: db)
        }
        if let parent, parentMoved {
            guard parent.zoneID == id.zoneID else {
                throw ShareFlowError(.referenceViolation, "\(item): its parent \(parent) must be in the same zone \(id.zoneID) (R25)")
            }
            try checkParent(parent.recordName, of: id.recordName, zone: zone, item: item, db: db)
        } else if let parent, try !db.recordExists(zone: zone.id, name: parent.recordName) {
            // R34: a child whose parent was deleted keeps the name, but R25 holds for every save.
            throw ShareFlowError(
                .referenceViolation,
                "\(item): its parent \(parent.recordName) no longer exists in zone \(zone.zoneID.zoneName); save it without a parent or under another (R25, R34)"
            )
        }
        if database.databaseScope == .public, let existing {
            try Engine.requireCreator(existing, caller: caller, item: item)
        }
        try checkChangeTag(record, existing: existing, policy: policy, zone: zone, caller: caller, item: item, db: db)
        // R5: shares never nest. A record moved under a shared record (or made again under
        // one, above orphans that kept its name, R34) may neither root a share nor have one
        // below it. Only a record with a share on it or children pays for the walk up.
        if let parent, parentMoved || existing == nil {
            let rooted = existing == nil ? nil : try shareRow(rootName: id.recordName, zone: zone, db: db)
            let below =
                try db.hasChildren(zone: zone.id, name: id.recordName)
                ? try db.sharedDescendantRoot(zone: zone.id, below: id.recordName) : nil
            if rooted != nil || below != nil,
                let above = try shareCovering(zone: zone, recordName: parent.recordName, db: db), above.id != rooted?.id
            {
                let what = rooted.map { "roots share \($0.recordName)" } ?? "has shared record \(below!) below it"
                throw ShareFlowError(.alreadyShared, "\(item) \(what) and cannot join share \(above.recordName) under \(parent.recordName) (R5)")
            }
        }
        let stored = try encodeFields(fields, item: item)
        let now = EngineClock.seconds
        let tag = RandomIdentifier.changeTag()
        let rowID: Int64
        if let existing {
            try db.updateRecord(id: existing.id, fields: stored, parentName: parent?.recordName, tag: tag, by: caller.id, at: now)
            rowID = existing.id
        } else {
            rowID = try db.insertRecord(
                zone: zone.id,
                name: id.recordName,
                type: record.recordType,
                fields: stored,
                parentName: parent?.recordName,
                tag: tag,
                by: caller.id,
                at: now
            )
        }
        if record.requestsShortGUID && existing?.shortGUID == nil {
            try db.setShortGUID(Engine.newShareToken(), record: rowID)
        }
        guard let savedRow = try recordRow(zone: zone, name: id.recordName, db: db) else {
            throw ShareFlowError(.unknownItem, "\(item) was deleted while it was being saved (by a policy)")
        }
        let saved = try makeRecord(savedRow, zone: zone, caller: caller, db: db)
        emitRecordSaved(saved, created: existing == nil, database: database, caller: caller)
        return saved
    }

    /// `record.saved` (SPEC §6), after commit: every saved record, shares included.
    func emitRecordSaved(_ record: Record, created: Bool, database: CloudDatabase, caller: Account) {
        guard events.hasObservers(.recordSaved) else { return }
        var event = Event(.recordSaved, caller: caller, container: database.container.containerIdentifier)
        event.record = record.duplicate()
        event.created = created
        event.database = database.databaseScope.rawValue
        emit(event)
    }

    /// `record.deleted` (SPEC §6), after commit.
    func emitRecordDeleted(_ id: RecordID, type: String, database: CloudDatabase, caller: Account) {
        guard events.hasObservers(.recordDeleted) else { return }
        var event = Event(.recordDeleted, caller: caller, container: database.container.containerIdentifier)
        event.recordID = id
        event.recordType = type
        event.database = database.databaseScope.rawValue
        emit(event)
    }
}
