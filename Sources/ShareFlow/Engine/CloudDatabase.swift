import Foundation

/// One of a container's three databases, seen by the container's session.
public final class CloudDatabase {
    public let container: Container
    public let databaseScope: DatabaseScope

    init(container: Container, scope: DatabaseScope) {
        self.container = container
        self.databaseScope = scope
    }

    var engine: Engine { container.session.engine }

    /// Creates a custom zone in the private database (or returns the one already there).
    @discardableResult
    public func saveZone(_ name: String) throws -> RecordZone {
        try engine.faultGate("modifyRecordZones", self, items: [FaultItem(zone: name)]) { try engine.saveZone(name, in: self) }
    }

    public func fetchAllRecordZones() throws -> [RecordZone] {
        try engine.fetchAllRecordZones(in: self)
    }

    /// The record, or `unknownItem`.
    public func fetchRecord(_ id: RecordID) throws -> Record {
        try engine.faultGate("fetchRecords", self, items: [FaultItem(id)]) { try engine.fetchRecord(id, in: self) }
    }

    /// Each ID's record or error, in input order.
    public func fetchRecords(_ ids: [RecordID]) -> [(RecordID, Result<Record, ShareFlowError>)] {
        // One request, however many records: its fault decided once.
        let fetch = {
            ids.map { id -> (RecordID, Result<Record, ShareFlowError>) in
                do { return (id, .success(try self.fetchRecord(id))) } catch {
                    return (id, .failure(error as? ShareFlowError ?? ShareFlowError(.serviceUnavailable, "\(error)").forOperator()))
                }
            }
        }
        return engine.faultScope("fetchRecords", self, items: ids.map { FaultItem($0) }, fetch)
    }

    /// Saves and deletes records and shares. Each item is atomic (O6); in custom zones the
    /// call is too, unless `atomically` is false (R22). Saves check change tags as
    /// `savePolicy` says (R21).
    ///
    /// ```swift
    /// let result = try db.modifyRecords(saving: [trip, share])
    /// if let e = result.firstError, e.code == .serverRecordChanged { merge(e.serverRecord!) }
    /// ```
    /// `deletingOnlyAtTags`: record IDs whose delete must find this change tag on the server
    /// (R21, checked in the same transaction; otherwise `serverRecordChanged`); the others are
    /// deleted whatever their tag, as CloudKit's deletes are.
    public func modifyRecords(
        saving: [Record] = [],
        deleting: [RecordID] = [],
        savePolicy: RecordSavePolicy = .ifServerRecordUnchanged,
        atomically: Bool = true,
        deletingOnlyAtTags: [RecordID: String] = [:]
    ) throws -> ModifyResult {
        try engine.faultGate(
            "modifyRecords",
            self,
            items: saving.map { FaultItem($0.recordID, type: $0.recordType) } + deleting.map { FaultItem($0) }
        ) {
            try engine.modifyRecords(
                saving: saving,
                deleting: deleting,
                savePolicy: savePolicy,
                atomic: atomically,
                deleteTags: deletingOnlyAtTags,
                in: self
            )
        }
    }

    /// The zone ID a new zone or record of this database gets for `name`.
    public func zoneID(_ name: String) throws -> RecordZoneID {
        RecordZoneID(zoneName: name, ownerName: databaseScope == .public ? Engine.publicOwnerName : try container.session.account.userRecordID)
    }
}
