import Foundation

/// One of a container's three databases, seen by the container's session.
///
/// ```swift
/// let db = try engine.session(for: "alice@example.com").container("iCloud.com.example.app").privateCloudDatabase
/// let zone = try db.saveZone("Trips")
/// let trip = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: zone.zoneID))
/// if let error = try db.modifyRecords(saving: [trip]).error { throw error }
/// let copy = try db.fetchRecord(trip.recordID)
/// ```
public final class CloudDatabase {
    /// The container this database belongs to; its session is the caller.
    public let container: Container
    /// Which of the container's three databases this is.
    public let databaseScope: DatabaseScope

    init(container: Container, scope: DatabaseScope) {
        self.container = container
        self.databaseScope = scope
    }

    var engine: Engine { container.session.engine }

    /// Creates a custom zone in the private database (or returns the one already there).
    @discardableResult
    public func saveZone(_ name: String) throws -> RecordZone {
        try enter(.modifyRecordZones(zone: name)) { try engine.saveZone(name, in: self) }
    }

    /// The zones the caller sees here: in the private database the default zone and their custom zones;
    /// in the shared one the zones of the shares they accepted (R12); in the public one its default zone.
    public func fetchAllRecordZones() throws -> [RecordZone] {
        try engine.fetchAllRecordZones(in: self)
    }

    /// The record, or `unknownItem`.
    public func fetchRecord(_ id: RecordID) throws -> Record {
        try enter(.fetchRecords([id])) { try engine.fetchRecord(id, in: self) }
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
        return engine.open(.fetchRecords(ids), container: container, database: databaseScope, fetch)
    }

    /// Saves and deletes records and shares. Each item is atomic (O6); in custom zones the
    /// call is too, unless `atomically` is false (R22). Saves check change tags as
    /// `savePolicy` says (R21).
    ///
    /// ```swift
    /// let result = try db.modifyRecords(saving: [trip, share])
    /// for (_, e) in result.error?.partialErrors ?? [] where e.code == .serverRecordChanged { merge(e.serverRecord!) }
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
        try enter(.modifyRecords(saving: saving.map { ($0.recordID, $0.recordType) }, deleting: deleting)) {
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

    /// Saves and deletes records and shares as CloudKit Web Services' `records/modify` names
    /// its operations (`RecordChange`): each compared with the server's copy inside the call's
    /// one write transaction (R21, R35, R36), shares made from drafts whose invitees are looked
    /// up there (R2, R7: `participant.fetched` once per invitee, after the save commits). Each
    /// change is atomic (O6); in custom zones the call is too, unless `atomically` is false
    /// (R22). Each change's outcome, in input order.
    ///
    /// ```swift
    /// let outcomes = try db.modify([.update(edited, tag: copy.recordChangeTag), .delete(oldID, tag: nil)])
    /// if case .failure(let e) = outcomes[0], e.code == .serverRecordChanged { fetchAgain() }
    /// ```
    public func modify(_ changes: [RecordChange], atomically: Bool = true) throws -> [Result<RecordChangeOutcome, ShareFlowError>] {
        try enter(.modify(changes)) {
            try engine.modify(changes, atomic: atomically, in: self)
        }
    }

    /// The zone ID a new zone or record of this database gets for `name`.
    public func zoneID(_ name: String) throws -> RecordZoneID {
        RecordZoneID(zoneName: name, ownerName: databaseScope == .public ? Engine.publicOwnerName : try container.session.account.userRecordID)
    }
}
