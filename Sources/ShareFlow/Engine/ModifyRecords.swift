import Foundation

/// One modifyRecords call: its items in the order that lets a call save a parent with its
/// children and a share with its root, each in a savepoint of its own, all undone when an
/// atomic call fails anywhere (R22). What each item may do is decided in `saveRecord`,
/// `saveShare` and `deleteRecord`.
extension Engine {
    /// Thrown inside an atomic batch's transaction to roll every item back (R22).
    private struct BatchRolledBack: Error {}

    /// The zones a call on `database` naming `zones` writes, as the store locks them (SPEC §16
    /// M5): named as `zone(for:in:caller:db:)` finds them, so every zone it finds was declared;
    /// with the lock on new zones' IDs when a default zone it names is not made yet (taken in
    /// order with the zones', so the request's first write can wait for it off the node's
    /// path). Read in one snapshot before the write, only where writers run at once.
    func writeScope(_ zones: [RecordZoneID], in database: CloudDatabase) throws -> StoreWriteScope {
        guard store.writersRunAtOnce else { return .wholeStore }
        let container = database.container.containerID
        let scope = database.databaseScope
        let caller = database.container.session.accountID
        return try reading { db in
            var me: String?
            var keys = Set<ZoneLockKey>()
            for zoneID in Set(zones) {
                var owner = zoneID.ownerName
                switch scope {
                case .public:
                    owner = Engine.publicOwnerName
                case .private where owner == RecordZoneID.currentUserName:
                    if me == nil { me = try loadAccount(id: caller, db: db).userRecordID }
                    owner = me!
                case .private, .shared:
                    break
                }
                keys.insert(ZoneLockKey(container: container, ownerName: owner, zoneName: zoneID.zoneName))
                if zoneID.isDefaultZone, scope != .shared, !keys.contains(.zoneIDAllocation),
                    try db.zoneRowID(container: container, isPublic: scope == .public, ownerID: scope == .public ? 0 : caller, name: zoneID.zoneName)
                        == nil
                {
                    keys.insert(.zoneIDAllocation)
                }
            }
            return .zones(keys)
        }
    }

    func modifyRecords(
        saving: [Record],
        deleting: [RecordID],
        savePolicy: RecordSavePolicy = .ifServerRecordUnchanged,
        atomic: Bool = true,
        deleteTags: [RecordID: String] = [:],
        in database: CloudDatabase
    ) throws -> ModifyResult {
        let (saves, deletes) = try modify(
            saving: saving.map { .given($0, savePolicy) },
            deleting: deleting,
            deleteTags: deleteTags,
            atomic: atomic,
            in: database
        )
        // Only what was committed reaches the caller's objects.
        var result = ModifyResult()
        for (record, outcome) in zip(saving, saves) {
            if case .success(let saved) = outcome {
                record.adoptServerState(of: saved)
                result.saved.append(saved)
            }
            result.saveResults.append((record, outcome))
        }
        for (id, outcome) in zip(deleting, deletes) {
            if case .success = outcome { result.deleted.append(id) }
            result.deleteResults.append((id, outcome))
        }
        return result
    }

    /// One modify call (`modifyRecords`, `modify(_:)`): its saves, each decided as `ModifySave`
    /// says in a savepoint of its own, then its deletes, in one write transaction; each
    /// item's outcome in input order.
    func modify(
        saving: [ModifySave],
        deleting: [RecordID],
        deleteTags: [RecordID: String],
        atomic: Bool,
        in database: CloudDatabase
    ) throws -> (saves: [Result<Record, ShareFlowError>], deletes: [Result<Void, ShareFlowError>]) {
        try Engine.requireSignedIn(database)
        let total = saving.count + deleting.count
        guard total <= ModifyLimits.maxItems else {
            throw ShareFlowError(
                .limitExceeded,
                "a modify call takes at most \(ModifyLimits.maxItems) records and record IDs; this one has \(total) (R22)"
            )
        }
        let records = saving.map(\.record)
        // R22: atomic where every item is in a custom zone, as CloudKit.
        let isAtomic = atomic && (records.map(\.recordID.zoneID) + deleting.map(\.zoneID)).allSatisfy { !$0.isDefaultZone }
        var saves = [Result<Record, ShareFlowError>?](repeating: nil, count: saving.count)
        var deletes = [Result<Void, ShareFlowError>?](repeating: nil, count: deleting.count)
        // SPEC §15: the items a rule fails (zoneBusy, partialFailure), decided in input order
        // before any is written, so a seed gives the same items whatever the save order.
        var injected: [Int: ShareFlowError] = [:]
        var injectedDeletes: [Int: ShareFlowError] = [:]
        if faults.isArmed {
            for (i, r) in records.enumerated() {
                injected[i] = itemFault(FaultItem(r.recordID, type: r.recordType), id: r.recordID, client: r, in: database)
            }
            for (n, id) in deleting.enumerated() {
                injectedDeletes[n] = itemFault(FaultItem(id), id: id, client: nil, in: database)
            }
        }
        // SPEC §19 A4: new assets' bytes made durable before the transaction, outside its lock.
        if records.contains(where: { $0.fields.values.contains(where: \.holdsAsset) }) {
            injected.merge(ingestAssets(records)) { first, _ in first }
        }
        defer { ingestedAssets = [:] }
        do {
            try transaction(scope: try writeScope(records.map(\.recordID.zoneID) + deleting.map(\.zoneID), in: database)) { db in
                let caller = try loadAccount(id: database.container.session.accountID, db: db)
                // What this call saved so far, and what it tried to and could not (a share's
                // root among them fails the share).
                var saved: [RecordID: Record] = [:]
                var savedIDs = Set<RecordID>()  // saved's keys, kept as it grows (each save reads it)
                var unsaved: [RecordID: ShareFlowError] = [:]
                for i in Engine.saveOrder(records) {
                    if let failure = injected[i] {
                        saves[i] = .failure(failure)
                        unsaved[records[i].recordID] = failure
                        continue
                    }
                    do {
                        let record = try transaction { db -> Record in
                            switch saving[i] {
                            case .given(let share as Share, let policy):
                                return try saveShare(share, in: database, caller: caller, policy: policy, savedInThisCall: savedIDs, db: db)
                            case .given(let record, let policy):
                                return try saveRecord(record, in: database, caller: caller, policy: policy, savedInThisCall: savedIDs, db: db)
                            case .edit(let record, let merge, let removing, let tag, let force):
                                let edited = try editedRecord(
                                    record,
                                    merge: merge,
                                    removing: removing,
                                    tag: tag,
                                    force: force,
                                    in: database,
                                    caller: caller,
                                    db: db
                                )
                                return try saveRecord(
                                    edited,
                                    in: database,
                                    caller: caller,
                                    policy: .ifServerRecordUnchanged,
                                    savedInThisCall: savedIDs,
                                    db: db
                                )
                            case .draft(let draft, _):
                                let share = try share(
                                    from: draft,
                                    in: database,
                                    caller: caller,
                                    saved: saved,
                                    unsaved: unsaved,
                                    atomic: isAtomic,
                                    db: db
                                )
                                // A new share's root is saved in this call: by an item of it, or
                                // again with the share (`share(from:)`).
                                return try saveShare(
                                    share,
                                    in: database,
                                    caller: caller,
                                    policy: .ifServerRecordUnchanged,
                                    savedInThisCall: savedIDs.union([share.rootRecordID].compactMap { $0 }),
                                    db: db
                                )
                            }
                        }
                        saves[i] = .success(record)
                        saved[records[i].recordID] = record
                        savedIDs.insert(records[i].recordID)
                    } catch {
                        let failure = ShareFlowError.wrap(error, store: store)
                        saves[i] = .failure(failure)
                        unsaved[records[i].recordID] = failure
                    }
                }
                for (n, id) in deleting.enumerated() {
                    if let failure = injectedDeletes[n] {
                        deletes[n] = .failure(failure)
                        continue
                    }
                    do {
                        try transaction { db in try deleteRecord(id, in: database, caller: caller, ifTag: deleteTags[id], db: db) }
                        deletes[n] = .success(())
                    } catch {
                        deletes[n] = .failure(ShareFlowError.wrap(error, store: store))
                    }
                }
                let failed =
                    saves.contains { if case .failure = $0 { true } else { false } }
                    || deletes.contains { if case .failure = $0 { true } else { false } }
                if isAtomic && failed { throw BatchRolledBack() }
            }
        } catch is BatchRolledBack {
            let culprits =
                (zip(records, saves).compactMap { r, o -> String? in
                    if case .failure(let e) = o, e.code != .batchRequestFailed { return r.recordID.recordName }
                    return nil
                }
                + zip(deleting, deletes).compactMap { id, o -> String? in
                    if case .failure = o { return id.recordName }
                    return nil
                }).joined(separator: ", ")
            let notApplied = { (what: String) in
                ShareFlowError(.batchRequestFailed, "\(what) was not applied: the call is atomic and \(culprits) failed (R22)")
            }
            for (i, o) in saves.enumerated() { if case .success = o { saves[i] = .failure(notApplied("record \(records[i].recordID.recordName)")) } }
            for (n, o) in deletes.enumerated() { if case .success = o { deletes[n] = .failure(notApplied("deleting \(deleting[n].recordName)")) } }
        }
        return (
            zip(records, saves).map { record, outcome in
                outcome ?? .failure(ShareFlowError(.serviceUnavailable, "record \(record.recordID.recordName) was not reached"))
            },
            zip(deleting, deletes).map { id, outcome in
                outcome ?? .failure(ShareFlowError(.serviceUnavailable, "deleting \(id.recordName) was not reached"))
            }
        )
    }

    /// Plain records before shares, so a new share finds its root saved in the same call (R5),
    /// and a parent before the children saved with it (R25).
    static func saveOrder(_ saving: [Record]) -> [Int] {
        var index: [RecordID: Int] = [:]
        for (i, r) in saving.enumerated() where !(r is Share) { index[r.recordID] = index[r.recordID] ?? i }
        var order: [Int] = []
        var state = [Int: Bool]()  // false: visiting, true: done
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
}
