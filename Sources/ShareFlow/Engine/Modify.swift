import Foundation

/// Saving and deleting records and shares: R3, R4, R5, R6, R8, R9, R11, R13, R14, R21, R22, R25.
extension Engine {
    /// Thrown inside an atomic batch's transaction to roll every item back (R22).
    private struct BatchRolledBack: Error {}

    func modifyRecords(saving: [Record], deleting: [RecordID], savePolicy: RecordSavePolicy = .ifServerRecordUnchanged,
                       atomic: Bool = true, deleteTags: [RecordID: String] = [:], in database: CloudDatabase) throws -> ModifyResult {
        try Engine.requireSignedIn(database)
        let total = saving.count + deleting.count
        guard total <= ModifyLimits.maxItems else {
            throw ShareFlowError(.limitExceeded, "a modify call takes at most \(ModifyLimits.maxItems) records and record IDs; this one has \(total) (R22)")
        }
        // R22: atomic where every item is in a custom zone, as CloudKit.
        let isAtomic = atomic && (saving.map(\.recordID.zoneID) + deleting.map(\.zoneID)).allSatisfy { !$0.isDefaultZone }
        var saves = [Result<Record, ShareFlowError>?](repeating: nil, count: saving.count)
        var deletes = [Result<Void, ShareFlowError>?](repeating: nil, count: deleting.count)
        do {
            try transaction { db in
                let caller = try loadAccount(id: database.container.session.accountID, db: db)
                var savedIDs = Set<RecordID>()
                for i in Engine.saveOrder(saving) {
                    let record = saving[i]
                    do {
                        saves[i] = .success(try transaction { db -> Record in
                            if let share = record as? Share {
                                return try saveShare(share, in: database, caller: caller, policy: savePolicy,
                                                     savedInThisCall: savedIDs, db: db)
                            }
                            return try saveRecord(record, in: database, caller: caller, policy: savePolicy,
                                                  savedInThisCall: savedIDs, db: db)
                        })
                        savedIDs.insert(record.recordID)
                    } catch {
                        saves[i] = .failure(ShareFlowError.wrap(error, store: store))
                    }
                }
                for (n, id) in deleting.enumerated() {
                    do {
                        try transaction { db in try deleteRecord(id, in: database, caller: caller, ifTag: deleteTags[id], db: db) }
                        deletes[n] = .success(())
                    } catch {
                        deletes[n] = .failure(ShareFlowError.wrap(error, store: store))
                    }
                }
                let failed = saves.contains { if case .failure = $0 { true } else { false } }
                    || deletes.contains { if case .failure = $0 { true } else { false } }
                if isAtomic && failed { throw BatchRolledBack() }
            }
        } catch is BatchRolledBack {
            let culprits = (zip(saving, saves).compactMap { r, o -> String? in
                if case .failure(let e) = o, e.code != .batchRequestFailed { return r.recordID.recordName }; return nil
            } + zip(deleting, deletes).compactMap { id, o -> String? in
                if case .failure = o { return id.recordName }; return nil
            }).joined(separator: ", ")
            let notApplied = { (what: String) in
                ShareFlowError(.batchRequestFailed, "\(what) was not applied: the call is atomic and \(culprits) failed (R22)")
            }
            for (i, o) in saves.enumerated() { if case .success = o { saves[i] = .failure(notApplied("record \(saving[i].recordID.recordName)")) } }
            for (n, o) in deletes.enumerated() { if case .success = o { deletes[n] = .failure(notApplied("deleting \(deleting[n].recordName)")) } }
        }
        // Only what was committed reaches the caller's objects.
        var result = ModifyResult()
        for (record, outcome) in zip(saving, saves) {
            let outcome = outcome ?? .failure(ShareFlowError(.serviceUnavailable, "record \(record.recordID.recordName) was not reached"))
            if case .success(let saved) = outcome {
                record.adoptServerState(of: saved)
                result.saved.append(saved)
            }
            result.saveResults.append((record, outcome))
        }
        for (id, outcome) in zip(deleting, deletes) {
            let outcome = outcome ?? .failure(ShareFlowError(.serviceUnavailable, "deleting \(id.recordName) was not reached"))
            if case .success = outcome { result.deleted.append(id) }
            result.deleteResults.append((id, outcome))
        }
        return result
    }

    /// Plain records before shares, so a new share finds its root saved in the same call (R5),
    /// and a parent before the children saved with it (R25).
    static func saveOrder(_ saving: [Record]) -> [Int] {
        var index: [RecordID: Int] = [:]
        for (i, r) in saving.enumerated() where !(r is Share) { index[r.recordID] = index[r.recordID] ?? i }
        var order: [Int] = [], state = [Int: Bool]()  // false: visiting, true: done
        func visit(_ i: Int) {
            guard state[i] == nil else { return }
            state[i] = false
            if let parent = saving[i].parent, let p = index[parent], state[p] == nil { visit(p) }
            state[i] = true
            order.append(i)
        }
        for i in saving.indices where !(saving[i] is Share) { visit(i) }
        return order + saving.indices.filter { saving[$0] is Share }
    }

    // MARK: Records

    func saveRecord(_ record: Record, in database: CloudDatabase, caller: Account, policy: RecordSavePolicy,
                    savedInThisCall: Set<RecordID>, db: StoreTransaction) throws -> Record {
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
            let covering = existing != nil
                ? try shareCovering(zone: zone, recordName: id.recordName, db: db)
                : try shareCovering(zone: zone, recordName: parent?.recordName, db: db)
            guard let covering, let me = try participantRow(share: covering.id, account: caller.id, db: db) else {
                throw ShareFlowError.denied("\(item) is not in a share \(caller.email ?? caller.userRecordID) participates in")
            }
            try SharingRules.require(.modifyRecords, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: covering.publicPermission != .none, item: item)
            if let parent, parentMoved,
               try shareCovering(zone: zone, recordName: parent.recordName, db: db)?.id != covering.id {
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
        let fields = policy.fieldsToWrite(of: record, over: existing?.fields)
        if let parent, parentMoved {
            guard parent.zoneID == id.zoneID else {
                throw ShareFlowError(.referenceViolation, "\(item): its parent \(parent) must be in the same zone \(id.zoneID) (R25)")
            }
            try checkParent(parent.recordName, of: id.recordName, zone: zone, item: item, db: db)
        } else if let parent, try !db.recordExists(zone: zone.id, name: parent.recordName) {
            // R34: a child whose parent was deleted keeps the name, but R25 holds for every save.
            throw ShareFlowError(.referenceViolation, "\(item): its parent \(parent.recordName) no longer exists in zone \(zone.zoneID.zoneName); save it without a parent or under another (R25, R34)")
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
            let below = try db.hasChildren(zone: zone.id, name: id.recordName)
                ? try db.sharedDescendantRoot(zone: zone.id, below: id.recordName) : nil
            if rooted != nil || below != nil,
               let above = try shareCovering(zone: zone, recordName: parent.recordName, db: db), above.id != rooted?.id {
                let what = rooted.map { "roots share \($0.recordName)" } ?? "has shared record \(below!) below it"
                throw ShareFlowError(.alreadyShared, "\(item) \(what) and cannot join share \(above.recordName) under \(parent.recordName) (R5)")
            }
        }
        let stored = try encodeFields(fields, item: item)
        let now = Date().timeIntervalSince1970
        let tag = RandomIdentifier.changeTag()
        let rowID: Int64
        if let existing {
            try db.updateRecord(id: existing.id, fields: stored, parentName: parent?.recordName, tag: tag, by: caller.id, at: now)
            rowID = existing.id
        } else {
            rowID = try db.insertRecord(zone: zone.id, name: id.recordName, type: record.recordType, fields: stored,
                                        parentName: parent?.recordName, tag: tag, by: caller.id, at: now)
        }
        if record.requestsShortGUID && existing?.shortGUID == nil {
            try db.setShortGUID(Engine.newShareToken(), record: rowID)
        }
        guard let savedRow = try recordRow(zone: zone, name: id.recordName, db: db) else {
            throw ShareFlowError(.unknownItem, "\(item) was deleted while it was being saved (by a policy)")
        }
        return try makeRecord(savedRow, zone: zone, caller: caller, db: db)
    }

    /// R23: names, keys and values a record may have.
    private func checkNaming(_ record: Record, item: String) throws {
        // Before any key is looked at: a million keys cost nothing to refuse.
        guard record.fields.count <= ModifyLimits.maxFields else {
            throw ShareFlowError(.limitExceeded, "\(item) holds \(record.fields.count) fields; a record holds at most \(ModifyLimits.maxFields) (R22)")
        }
        let id = record.recordID
        try Naming.check(recordName: id.recordName)
        try Naming.check(text: id.zoneID.zoneName, "zone name")
        try Naming.check(text: id.zoneID.ownerName, "zone owner")
        let isShare = record is Share
        if !isShare { try Naming.check(recordType: record.recordType) }
        for (key, value) in record.fields {
            // A share's own fields are CloudKit's (`cloudkit.title`).
            if !(isShare && key.hasPrefix("cloudkit.") && Naming.isSymbol(String(key.dropFirst(9)))) {
                do { try Naming.check(fieldKey: key) } catch let e as ShareFlowError { throw ShareFlowError.invalid("\(item): \(e.message)") }
            }
            if let problem = value.problem(key: key) { throw ShareFlowError.invalid("\(item): \(problem)") }
        }
        if let parent = record.parent { try Naming.check(recordName: parent.recordName) }
    }

    /// R25: the parent exists in the zone (saved before, or earlier in this call, which
    /// `saveOrder` arranges), and is neither the record nor one of its descendants.
    private func checkParent(_ parentName: String, of name: String, zone: ZoneRow, item: String, db: StoreTransaction) throws {
        guard parentName != name else {
            throw ShareFlowError(.referenceViolation, "\(item): its parent \(parentName) is the record itself; parent chains never form a cycle (R25)")
        }
        guard try db.recordExists(zone: zone.id, name: parentName) else {
            throw ShareFlowError(.referenceViolation, "\(item): its parent \(parentName) does not exist in zone \(zone.zoneID.zoneName); save the parent first or in the same call (R25)")
        }
        // Only a record with children can be above its new parent, so a leaf (every new record
        // but one re-made under a deleted name its orphans still name, R34) costs two index
        // seeks whatever its depth; otherwise one walk up in SQL, not a row read per level.
        guard try db.hasChildren(zone: zone.id, name: name), try db.isAncestor(name, of: parentName, zone: zone.id) else { return }
        throw ShareFlowError(.referenceViolation, "\(item): its parent \(parentName) descends from it; parent chains never form a cycle (R25)")
    }

    /// R21 under `ifServerRecordUnchanged`: the copy saved is the server's current one.
    private func checkChangeTag(_ record: Record, existing: RecordRow?, policy: RecordSavePolicy, zone: ZoneRow,
                                caller: Account, item: String, db: StoreTransaction) throws {
        guard policy == .ifServerRecordUnchanged else { return }
        let reason: String
        switch (existing, record.recordChangeTag) {
        case (nil, nil):
            return
        case (nil, let tag?):
            throw ShareFlowError(.unknownItem, "\(item) no longer exists on the server (this copy has change tag \(tag)); save it as a new record, or drop it")
        case (let row?, nil):
            reason = "\(item) already exists on the server (change tag \(row.tag)); fetch it and change that copy, or save with savePolicy allKeys (R21)"
        case (let row?, let tag?):
            guard tag != row.tag else { return }
            reason = "\(item) changed on the server since this copy was fetched (copy's change tag \(tag), server's \(row.tag)); merge with the error's serverRecord and save again (R21)"
        }
        var error = ShareFlowError(.serverRecordChanged, reason)
        error.conflict = RecordConflict(server: try makeRecord(existing!, zone: zone, caller: caller, db: db),
                                        client: record.duplicate(), ancestor: record.ancestor())
        throw error
    }

    // MARK: Shares

    func saveShare(_ share: Share, in database: CloudDatabase, caller: Account, policy: RecordSavePolicy,
                   savedInThisCall: Set<RecordID>, db: StoreTransaction) throws -> Share {
        let id = share.recordID
        let item = "share \(share.title.map { "'\($0)'" } ?? Naming.printable(id.recordName))"
        try checkNaming(share, item: item)
        let container = database.container.containerIdentifier
        guard database.databaseScope != .public else {
            throw ShareFlowError(.badDatabase, "\(item): sharing happens only in a private database's custom zone, not the public database (R3)")
        }
        guard !id.zoneID.isDefaultZone else {
            throw ShareFlowError.invalid("\(item): sharing happens only in a custom zone; \(id.zoneID.zoneName) is the default zone (R3)")
        }
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        var stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
        let created = stored == nil
        // The share's change tag before this save wrote anything (R35).
        let tagAtStart = created ? nil : try recordRow(zone: zone, name: id.recordName, db: db)?.tag
        var me: ParticipantRow?
        // What this save writes: the copy's fields and public permission, or (changedKeys) only
        // what the copy changed.
        var fields = share.fields
        var publicPermission = share.publicPermission

        // A policy may call back into the engine and change the store (its own nested write).
        // After one did, the save goes on from the store as it is now: the zone, the share, the
        // caller's place on it and the root are read again and every check made again, so what
        // a policy deleted is zoneNotFound or unknownItem, never a write the store refuses.
        func zoneStillExists() throws {
            guard let now = try db.zone(id: zone.id, publicOwnerName: Engine.publicOwnerName), now.zoneID == zone.zoneID else {
                throw ShareFlowError(.zoneNotFound, "\(item): zone \(zone.zoneID.zoneName) was deleted while the share was being saved (by a policy)")
            }
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
                try SharingRules.require(.manageParticipants, role: me.role, permission: me.permission, status: me.status,
                                         isPublicShare: existing.publicPermission != .none, item: item)
            }
            let record = try recordRow(zone: zone, name: id.recordName, db: db)
            try checkChangeTag(share, existing: record, policy: policy, zone: zone, caller: caller, item: item, db: db)
            // R29, as for any record: the keys the copy changed (allKeys: all it holds).
            fields = policy.fieldsToWrite(of: share, over: record?.fields ?? [:])
            publicPermission = share.publicPermission
            if policy == .changedKeys, share.publicPermission == share.serverPublicPermission {
                publicPermission = existing.publicPermission
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
            if try askPolicies(PolicyRequest(point: .shareSave, caller: caller, container: container, share: share), item: item, db: db) {
                existing = try shareStillExists(existing)
                stored = existing
                me = try checkUpdate(existing)
            }
            try db.updateRecord(id: existing.recordID, fields: try encodeFields(fields, item: item), parentName: nil,
                                tag: RandomIdentifier.changeTag(), by: caller.id, at: Date().timeIntervalSince1970)
        } else {
            guard database.databaseScope == .private else {
                throw ShareFlowError.denied("\(item): only the zone's owner creates shares, in their private database")
            }
            try checkCreate()
            if try askPolicies(PolicyRequest(point: .shareSave, caller: caller, container: container, share: share), item: item, db: db) {
                try zoneStillExists()
                if let root = share.rootRecordID, try recordRow(zone: zone, name: root.recordName, db: db) == nil {
                    throw ShareFlowError.unknown("\(item): its root record \(root.recordName) was deleted while the share was being saved (by a policy)")
                }
                try checkCreate()
            }
            let now = Date().timeIntervalSince1970
            let recordRowID = try db.insertRecord(zone: zone.id, name: id.recordName, type: Share.recordType,
                                                  fields: try encodeFields(fields, item: item), parentName: nil,
                                                  tag: RandomIdentifier.changeTag(), by: caller.id, at: now)
            // The root's reserved short GUID, when a client asked for one (SPEC §13), is the token.
            var token = Engine.newShareToken()
            if let rootName = share.rootRecordID?.recordName, let reserved = try recordRow(zone: zone, name: rootName, db: db)?.shortGUID,
               try db.share(token: reserved) == nil {
                token = reserved
            }
            let shareID = try db.insertShare(record: recordRowID, zone: zone.id, token: token,
                                             rootName: share.rootRecordID?.recordName)
            try db.insertParticipant(share: shareID, participantID: RandomIdentifier.uuidString(), account: caller.id,
                                     lookup: caller.primaryLookup, role: .owner, permission: .readWrite, status: .accepted, at: now)
            stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
            me = try participantRow(share: shareID, account: caller.id, db: db)
        }
        var row = stored!, mine = me!
        let isPublic = publicPermission != .none

        // R11, only on a real change: changing publicPermission removes pending participants;
        // `none` removes all but the owner.
        if publicPermission != row.publicPermission {
            guard publicPermission != .unknown else {
                throw ShareFlowError.invalid("\(item): publicPermission 'unknown' cannot be set")
            }
            try SharingRules.require(.changePublicPermission, role: mine.role, permission: mine.permission, status: mine.status,
                                     isPublicShare: isPublic, item: item)
            if try askPolicies(PolicyRequest(point: .sharePublicPermission, caller: caller, container: container, share: share,
                                             from: row.publicPermission.rawValue, to: publicPermission.rawValue), item: item, db: db) {
                row = try shareStillExists(row)
                guard let now = try participantRow(share: row.id, account: caller.id, db: db) else {
                    throw ShareFlowError.unknown("\(item) does not exist")
                }
                mine = now
                try SharingRules.require(.changePublicPermission, role: mine.role, permission: mine.permission, status: mine.status,
                                         isPublicShare: isPublic, item: item)
            }
            try db.setPublicPermission(publicPermission, share: row.id)
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
        let staleServerCopy = try created || policy == .ifServerRecordUnchanged || share.recordChangeTag == tagAtStart ? nil
            : makeShare(row, zone: zone, caller: caller, db: db)
        let participantsBefore = staleServerCopy == nil ? [] : try participantRows(share: row.id, db: db).map(\.state)
        try applyParticipantChanges(share, row: row, me: mine, publicPermission: publicPermission, asShown: policy != .changedKeys,
                                    caller: caller, container: container, item: item, db: db)
        if let server = staleServerCopy, try participantRows(share: row.id, db: db).map(\.state) != participantsBefore {
            var error = ShareFlowError(.serverRecordChanged, "\(item) changed on the server since this copy (copy's change tag \(share.recordChangeTag ?? "none"), server's \(tagAtStart ?? "?")); whatever the save policy, a share's participants are changed only from the server's current copy: merge with the error's serverRecord and save again (R35)")
            error.conflict = RecordConflict(server: server, client: share.duplicate(), ancestor: share.ancestor())
            throw error
        }

        // R8
        let count = try db.activeParticipantCount(share: row.id)
        if count > options.maxParticipants {
            throw ShareFlowError(.tooManyParticipants, "\(item) would have \(count) participants; a share holds at most \(options.maxParticipants), owner included (R8)")
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
        return fresh
    }

    /// R22: at most 1 MB of field data per record, as stored.
    private func encodeFields(_ fields: [String: FieldValue], item: String) throws -> StoredFields {
        guard fields.count <= ModifyLimits.maxFields else {
            throw ShareFlowError(.limitExceeded, "\(item) holds \(fields.count) fields; a record holds at most \(ModifyLimits.maxFields) (R22)")
        }
        let stored = try StoredFields(fields)
        guard stored.byteCount <= ModifyLimits.maxRecordBytes else {
            throw ShareFlowError(.limitExceeded, "\(item) holds \(stored.byteCount) bytes of field data; a record holds at most \(ModifyLimits.maxRecordBytes) (R22)")
        }
        return stored
    }

    /// R5: the root is saved in this call, and neither it, its ancestors, its descendants nor
    /// its zone is shared already.
    private func checkNotAlreadyShared(_ share: Share, zone: ZoneRow, savedInThisCall: Set<RecordID>, item: String, db: StoreTransaction) throws {
        if let zoneShare = try zoneShareRow(zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): zone \(zone.zoneID.zoneName) is already shared by \(zoneShare.recordName) (R5)")
        }
        guard let rootID = share.rootRecordID else {
            if let any = try db.anySharedRoot(zone: zone.id) {
                throw ShareFlowError(.alreadyShared, "\(item): record \(any) in zone \(zone.zoneID.zoneName) is already shared; a zone share needs an unshared zone (R5)")
            }
            return
        }
        guard savedInThisCall.contains(rootID) else {
            throw ShareFlowError.invalid("\(item) must be saved in the same modifyRecords call as its root record \(rootID.recordName) (R5)")
        }
        if let existing = try shareRow(rootName: rootID.recordName, zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): record \(rootID.recordName) is already shared by \(existing.recordName) (R5)")
        }
        let parentName = try db.parentName(zone: zone.id, name: rootID.recordName)
        if let parentName, let above = try shareCovering(zone: zone, recordName: parentName, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): an ancestor of \(rootID.recordName) is already shared by \(above.recordName) (R5)")
        }
        if let below = try db.sharedDescendantRoot(zone: zone.id, below: rootID.recordName) {
            throw ShareFlowError(.alreadyShared, "\(item): descendant \(below) of \(rootID.recordName) is already shared (R5)")
        }
    }

    /// R9, R26: makes the share's participants those the saved object shows (`asShown`), or
    /// (changedKeys) applies only the adds and removes made on the object. Participants R11
    /// just took off stay off unless this save adds them.
    private func applyParticipantChanges(_ share: Share, row: ShareRow, me: ParticipantRow, publicPermission: ParticipantPermission,
                                         asShown: Bool, caller: Account,
                                         container: String, item: String, db: StoreTransaction) throws {
        var rows = try participantRows(share: row.id, db: db)
        func requireManage() throws {
            try SharingRules.require(.manageParticipants, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: publicPermission != .none, item: item)
        }
        var matchedRows = Set<Int64>()
        for p in share.participants {
            var matched: Int64?
            if let userRecordID = p.userIdentity.userRecordID { matched = try accountID(for: .userRecordID(userRecordID), db: db) }
            let byID = rows.first(where: { $0.participantID == p.participantID })
            var existing = byID ?? rows.first(where: { isSamePerson($0, accountID: matched, lookup: p.userIdentity.lookupInfo) })
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
                throw ShareFlowError.invalid("\(item): participants can be added only while publicPermission is none; it is \(publicPermission.rawValue) (R9)")
            }
            let role = try newRole(for: p, me: me, item: item)
            if try askPolicies(PolicyRequest(point: .participantAdd, caller: caller, container: container, share: share, participant: p),
                               item: item, db: db) {
                // A policy called back into the engine and changed the store: the add goes on
                // from the share as it is now, or fails as ShareFlow says it.
                guard let now = try db.share(id: row.id), now.token == row.token else {
                    throw ShareFlowError.unknown("\(item) was deleted while it was being saved (by a policy)")
                }
                guard let meNow = try participantRow(share: row.id, account: caller.id, db: db) else {
                    throw ShareFlowError.unknown("\(item) does not exist")
                }
                try SharingRules.require(.manageParticipants, role: meNow.role, permission: meNow.permission, status: meNow.status,
                                         isPublicShare: now.publicPermission != .none, item: item)
                guard now.publicPermission == .none else {
                    throw ShareFlowError.invalid("\(item): participants can be added only while publicPermission is none; it is \(now.publicPermission.rawValue) (R9)")
                }
                rows = try participantRows(share: row.id, db: db)
                existing = rows.first(where: { $0.participantID == p.participantID })
                    ?? rows.first(where: { isSamePerson($0, accountID: matched, lookup: p.userIdentity.lookupInfo) })
                if let existing, existing.status != .removed {
                    // The policy put them on the share itself.
                    matchedRows.insert(existing.id)
                    continue
                }
            }
            let lookup = p.userIdentity.lookupInfo ?? .userRecordID(p.userIdentity.userRecordID ?? "")
            if let existing {
                try db.reinstate(participant: existing.id, role: role, permission: p.permission, at: Date().timeIntervalSince1970)
            } else {
                // A participant ID names one place on one share: an object already placed on
                // another share (a copy of its participants) gets a fresh one here.
                let participantID = try db.participantIDExists(p.participantID) ? RandomIdentifier.uuidString() : p.participantID
                matchedRows.insert(try db.insertParticipant(share: row.id, participantID: participantID, account: matched, lookup: lookup,
                                                            role: role, permission: p.permission, status: .pending,
                                                            at: Date().timeIntervalSince1970))
            }
            rows = try participantRows(share: row.id, db: db)
            p.acceptanceStatus = .pending
            p.role = role
            var event = Event(.participantAdded, caller: caller, container: container)
            event.share = share
            event.participant = p
            emit(event)
        }
        // Off the share: as shown, whoever the object no longer lists; under changedKeys, whom
        // the object removed.
        let leaving = asShown
            ? rows.filter { !matchedRows.contains($0.id) && $0.status != .removed
                && ($0.role != .owner || share.removedParticipantIDs.contains($0.participantID)) }
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
            throw ShareFlowError.invalid("\(item): a participant added by the owner is a privateUser or an administrator, not \(p.role.rawValue) (R26)")
        }
    }

    /// R26: the owner makes a private participant an administrator, or back.
    private func changeRole(of row: ParticipantRow, to p: Participant, share: Share, me: ParticipantRow, caller: Account,
                            container: String, item: String, db: StoreTransaction) throws {
        guard p.role != row.role, p.role != .unknown else { return }
        let movable: Set<ParticipantRole> = [.administrator, .privateUser]
        guard movable.contains(p.role), movable.contains(row.role) else {
            throw ShareFlowError.invalid("\(item): the role of \(p.userIdentity) cannot change from \(row.role.rawValue) to \(p.role.rawValue); only privateUser and administrator swap (R26)")
        }
        guard me.role == .owner else {
            throw ShareFlowError.denied("\(item): only the owner changes a participant's role (R26)")
        }
        try db.setRole(p.role, participant: row.id)
    }

    private func isSamePerson(_ row: ParticipantRow, accountID: Int64?, lookup: LookupInfo?) -> Bool {
        if let accountID, row.accountID == accountID { return true }
        return row.accountID == nil && lookup != nil && lookup == row.lookup
    }

    /// Changes a participant's status; a removal emits `participant.removed` with its reason.
    func setStatus(_ status: ParticipantAcceptanceStatus, of row: ParticipantRow, share: Share?, reason: RemovalReason?,
                   caller: Account, container: String, db: StoreTransaction) throws {
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

    /// R30: the public reader (a visitor not signed in) reads the public database and writes
    /// nothing.
    static func requireSignedIn(_ database: CloudDatabase) throws {
        guard database.container.session.accountID != Account.publicReader.id else {
            throw ShareFlowError.denied("a visitor who is not signed in reads the public database only; writes need a user (R30)")
        }
    }

    /// R30: the public database is world readable and creator writable (CloudKit's default
    /// security role): only the account that created a record changes or deletes it.
    static func requireCreator(_ row: RecordRow, caller: Account, item: String) throws {
        guard row.createdBy == caller.id else {
            throw ShareFlowError.denied("\(item) was created by another user; in the public database only its creator may change or delete it (R30)")
        }
    }

    // MARK: Deleting

    func deleteRecord(_ id: RecordID, in database: CloudDatabase, caller: Account, ifTag: String? = nil, db: StoreTransaction) throws {
        let item = "record \(id.recordName)"
        /// R21 for a delete that names the copy it deletes: checked once the caller may delete
        /// (R37: nothing is told about a record they may not touch).
        func checkTag(_ row: RecordRow) throws {
            guard let ifTag, ifTag != row.tag else { return }
            let copy = ifTag.isEmpty ? "no change tag given" : "change tag \(ifTag)"
            throw ShareFlowError(.serverRecordChanged, "\(item) changed on the server since this copy (\(copy), server's \(row.tag)); a delete names the current recordChangeTag: fetch it and delete again (R21)")
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
                try endShare(share, zone: zone, caller: caller, container: container, db: db)
                return
            }
            // R14: a participant deleting the share leaves it; it stays for everyone else.
            guard let me = try participantRow(share: share.id, account: caller.id, db: db) else { throw missing }
            try SharingRules.require(.deleteShare, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: share.publicPermission != .none, item: "share \(row.name)")
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
                  SharingRules.decide(.readRecords, role: me.role, permission: me.permission, status: me.status,
                                      isPublicShare: covering.publicPermission != .none).isAllowed else {
                throw missing
            }
            if covering.rootName == row.name {
                try SharingRules.require(.deleteRootRecord, role: me.role, permission: me.permission, status: me.status,
                                         isPublicShare: covering.publicPermission != .none, item: item)
            }
            try SharingRules.require(.modifyRecords, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: covering.publicPermission != .none, item: item)
        }
        try checkTag(row)
        // R13: deleting a hierarchy's root deletes its share.
        if let rooted = try shareRow(rootName: row.name, zone: zone, db: db) {
            try endShare(rooted, zone: zone, caller: caller, container: container, db: db)
        }
        try db.deleteRecord(id: row.id)
    }

    /// R14: the owner deleting a share ends it for everyone.
    private func endShare(_ share: ShareRow, zone: ZoneRow, caller: Account, container: String, db: StoreTransaction) throws {
        let object = try makeShare(share, zone: zone, caller: caller, db: db)
        for p in try participantRows(share: share.id, db: db) where p.role != .owner && p.status != .removed {
            try setStatus(.removed, of: p, share: object, reason: .shareDeleted, caller: caller, container: container, db: db)
        }
        try db.deleteRecord(id: share.recordID)
        var event = Event(.shareDeleted, caller: caller, container: container)
        event.share = object
        emit(event)
    }

}

extension Account {
    /// How the account is named on its own participant row.
    var primaryLookup: LookupInfo {
        if let e = email { return .emailAddress(e) }
        if let p = phones.first { return .phoneNumber(p) }
        return .userRecordID(userRecordID)
    }
}

extension ShareFlowError {
    /// Any error as a ShareFlow error: a store failure is `serviceUnavailable`, naming the
    /// store and the cause but never the SQL.
    static func wrap(_ error: Error, store: Store? = nil) -> ShareFlowError {
        if let e = error as? ShareFlowError { return e }
        return StoreFailure(error, path: store?.path).shareFlowError
    }
}

