import Foundation

/// Saves and deletes records and shares in a database (R3–R14).
public final class ModifyRecordsOperation: CloudOperation {
    public var recordsToSave: [Record]?
    public var recordIDsToDelete: [RecordID]?
    /// R21: how saves treat the server's copies.
    public var savePolicy: RecordSavePolicy = .ifServerRecordUnchanged
    /// R22: in custom zones, all items or none.
    public var isAtomic = true
    public var perRecordSaveBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    public var perRecordDeleteBlock: ((RecordID, Result<Void, ShareFlowError>) -> Void)?
    public var modifyRecordsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var modifyRecordsCompletionBlock: (([Record]?, [RecordID]?, ShareFlowError?) -> Void)?

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
            } catch { self.error = .wrap(error) }
        }
        modifyRecordsResultBlock?(error.map { .failure($0) } ?? .success(()))
        modifyRecordsCompletionBlock?(result.saved, result.deleted, error)
    }
}

/// Creates and deletes zones of the private database.
public final class ModifyRecordZonesOperation: CloudOperation {
    public var recordZonesToSave: [String]?
    public var recordZoneIDsToDelete: [RecordZoneID]?
    public var perRecordZoneSaveBlock: ((String, Result<RecordZone, ShareFlowError>) -> Void)?
    public var perRecordZoneDeleteBlock: ((RecordZoneID, Result<Void, ShareFlowError>) -> Void)?
    public var modifyRecordZonesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var modifyRecordZonesCompletionBlock: (([RecordZone]?, [RecordZoneID]?, ShareFlowError?) -> Void)?

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

/// Fetches records by ID.
public final class FetchRecordsOperation: CloudOperation {
    public var recordIDs: [RecordID]?
    public var desiredKeys: [String]?
    public var perRecordResultBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    public var fetchRecordsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var fetchRecordsCompletionBlock: (([RecordID: Record]?, ShareFlowError?) -> Void)?

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
