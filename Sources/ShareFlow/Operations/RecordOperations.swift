import Foundation

/// Saves and deletes records and shares in a database (R3–R14, R21, R22), as
/// `CKModifyRecordsOperation`: in `database`, the private one when unset.
///
/// The items are one modify call: when the call fails as a whole (more than 400 items, R22; a
/// request-level fault, §15; cancelled before it ran), each per-record block is still called
/// once, with that error (O2, O4), then the completion blocks.
///
/// ```swift
/// let trip = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: zone.zoneID))
/// trip["title"] = .string("Lisbon")
/// let op = ModifyRecordsOperation(recordsToSave: [trip], recordIDsToDelete: [oldTripID])
/// op.isAtomic = false
/// op.perRecordSaveBlock = { id, result in if case .failure(let error) = result { print(id, error.code) } }
/// op.modifyRecordsResultBlock = { result in if case .failure(let error) = result { print(error.partialErrors) } }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class ModifyRecordsOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// The records and shares to save. Set this or `recordIDsToDelete` (neither:
    /// `invalidArguments`, O4).
    public var recordsToSave: [Record]?
    /// The records and shares to delete.
    public var recordIDsToDelete: [RecordID]?
    /// R21: how saves treat the server's copies.
    public var savePolicy: RecordSavePolicy = .ifServerRecordUnchanged
    /// R22: in custom zones, all items or none.
    public var isAtomic = true
    /// Called once per record to save, in input order, with the record as saved or its error,
    /// as Apple's. The saved object takes the server's state (its new change tag, R21).
    public var perRecordSaveBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    /// Called once per record ID to delete, in input order, after the save blocks, as Apple's.
    public var perRecordDeleteBlock: ((RecordID, Result<Void, ShareFlowError>) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` with each
    /// failed item, O3), as Apple's.
    public var modifyRecordsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the records saved, the IDs deleted and the error.
    public var modifyRecordsCompletionBlock: (([Record]?, [RecordID]?, ShareFlowError?) -> Void)?

    /// An operation that saves `recordsToSave` and deletes `recordIDsToDelete`.
    public init(recordsToSave: [Record]? = nil, recordIDsToDelete: [RecordID]? = nil) {
        self.recordsToSave = recordsToSave
        self.recordIDsToDelete = recordIDsToDelete
    }

    override var itemCount: Int { (recordsToSave?.count ?? 0) + (recordIDsToDelete?.count ?? 0) }

    override func faultItems() -> [FaultItem] {
        (recordsToSave ?? []).map { FaultItem($0.recordID, type: $0.recordType) } + (recordIDsToDelete ?? []).map { FaultItem($0) }
    }

    override func main(container: Container) {
        var result = ModifyResult()
        if recordsToSave == nil && recordIDsToDelete == nil {
            error = missing("recordsToSave or recordIDsToDelete")
        } else if isCancelled {
            error = ShareFlowError(.operationCancelled, "\(typeName) was cancelled")
            deliverEach(error!)
        } else {
            do {
                result = try (database ?? container.privateCloudDatabase)
                    .modifyRecords(
                        saving: recordsToSave ?? [],
                        deleting: recordIDsToDelete ?? [],
                        savePolicy: savePolicy,
                        atomically: isAtomic
                    )
                for (record, r) in result.saveResults { perRecordSaveBlock?(record.recordID, r) }
                for (id, r) in result.deleteResults { perRecordDeleteBlock?(id, r) }
                error = result.error
            } catch {
                self.error = .wrap(error)
                deliverEach(self.error!)
            }
        }
        modifyRecordsResultBlock?(error.map { .failure($0) } ?? .success(()))
        modifyRecordsCompletionBlock?(result.saved, result.deleted, error)
    }

    /// O2: every item's block once, with the error of a call that failed as a whole.
    private func deliverEach(_ error: ShareFlowError) {
        for record in recordsToSave ?? [] { perRecordSaveBlock?(record.recordID, .failure(error)) }
        for id in recordIDsToDelete ?? [] { perRecordDeleteBlock?(id, .failure(error)) }
    }
}

/// Creates and deletes zones of the private database, as `CKModifyRecordZonesOperation`; each
/// zone is its own item (another database: `badDatabase` per item).
///
/// ```swift
/// let op = ModifyRecordZonesOperation(recordZonesToSave: ["Trips"])
/// op.perRecordZoneSaveBlock = { name, result in if let zone = try? result.get() { zones[name] = zone.zoneID } }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class ModifyRecordZonesOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// The names of the zones to create (Apple's takes zone objects); a zone already there is
    /// returned as it is. Set this or `recordZoneIDsToDelete` (neither: `invalidArguments`, O4).
    public var recordZonesToSave: [String]?
    /// The zones to delete, with their records; their shares end for every participant.
    public var recordZoneIDsToDelete: [RecordZoneID]?
    /// Called once per zone name, in input order, with the zone or its error.
    public var perRecordZoneSaveBlock: ((String, Result<RecordZone, ShareFlowError>) -> Void)?
    /// Called once per zone ID to delete, in input order, after the save blocks.
    public var perRecordZoneDeleteBlock: ((RecordZoneID, Result<Void, ShareFlowError>) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure`, O3), as Apple's.
    public var modifyRecordZonesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the zones saved, the zone IDs deleted and the error.
    public var modifyRecordZonesCompletionBlock: (([RecordZone]?, [RecordZoneID]?, ShareFlowError?) -> Void)?

    /// An operation that creates the zones named `recordZonesToSave` and deletes `recordZoneIDsToDelete`.
    public init(recordZonesToSave: [String]? = nil, recordZoneIDsToDelete: [RecordZoneID]? = nil) {
        self.recordZonesToSave = recordZonesToSave
        self.recordZoneIDsToDelete = recordZoneIDsToDelete
    }

    override var itemCount: Int { (recordZonesToSave?.count ?? 0) + (recordZoneIDsToDelete?.count ?? 0) }

    override func faultItems() -> [FaultItem] {
        (recordZonesToSave ?? []).map { FaultItem(zone: $0) } + (recordZoneIDsToDelete ?? []).map { FaultItem(zone: $0.zoneName) }
    }

    override func main(container: Container) {
        var saved: [RecordZone] = []
        var deleted: [RecordZoneID] = []
        if recordZonesToSave == nil && recordZoneIDsToDelete == nil {
            error = missing("recordZonesToSave or recordZoneIDsToDelete")
        } else {
            let db = database ?? container.privateCloudDatabase
            let saveFailures = process(
                recordZonesToSave ?? [],
                id: { $0 },
                body: { try db.saveZone($0) },
                deliver: { name, r in
                    if case .success(let z) = r { saved.append(z) }
                    perRecordZoneSaveBlock?(name, r)
                }
            )
            let deleteFailures = process(
                recordZoneIDsToDelete ?? [],
                id: \.description,
                body: { try db.deleteZone($0) },
                deliver: { id, r in
                    if case .success = r { deleted.append(id) }
                    perRecordZoneDeleteBlock?(id, r)
                }
            )
            error = completionError(saveFailures + deleteFailures, total: itemCount)
        }
        modifyRecordZonesResultBlock?(error.map { .failure($0) } ?? .success(()))
        modifyRecordZonesCompletionBlock?(saved, deleted, error)
    }
}

/// Fetches records and shares by ID, as `CKFetchRecordsOperation`: from `database`, the private
/// one when unset.
///
/// ```swift
/// let op = FetchRecordsOperation(recordIDs: [tripID, dayID])
/// op.desiredKeys = ["title"]
/// op.perRecordResultBlock = { id, result in if let record = try? result.get() { cache[id] = record } }
/// op.database = container.sharedCloudDatabase
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class FetchRecordsOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// The records to fetch (unset: `invalidArguments`, O4).
    public var recordIDs: [RecordID]?
    /// The fields each record comes with; nil: all. A share always comes whole.
    public var desiredKeys: [String]?
    /// Called once per ID, in input order, with the record or its error (`unknownItem` when there
    /// is none), as Apple's.
    public var perRecordResultBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure`, O3), as Apple's.
    public var fetchRecordsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the records fetched by ID, and the error.
    public var fetchRecordsCompletionBlock: (([RecordID: Record]?, ShareFlowError?) -> Void)?

    /// An operation that fetches `recordIDs`.
    public init(recordIDs: [RecordID]? = nil) { self.recordIDs = recordIDs }

    override var itemCount: Int { recordIDs?.count ?? 0 }

    override func faultItems() -> [FaultItem] { (recordIDs ?? []).map { FaultItem($0) } }

    override func main(container: Container) {
        var records: [RecordID: Record] = [:]
        if let ids = recordIDs {
            let db = database ?? container.privateCloudDatabase
            let failures = process(
                ids,
                id: \.description,
                body: { id -> Record in
                    let r = try db.fetchRecord(id)
                    return r is Share ? r : r.copy(keys: desiredKeys)
                },
                deliver: { id, r in
                    if case .success(let rec) = r { records[id] = rec }
                    perRecordResultBlock?(id, r)
                }
            )
            error = completionError(failures, total: ids.count)
        } else {
            error = missing("recordIDs")
        }
        fetchRecordsResultBlock?(error.map { .failure($0) } ?? .success(()))
        fetchRecordsCompletionBlock?(records, error)
    }
}
