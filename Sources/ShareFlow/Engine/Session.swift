import Foundation

/// Acting as one account: the caller of everything done through its containers (O1).
public final class Session {
    public let engine: Engine
    let accountID: Int64

    init(engine: Engine, account: Account) {
        self.engine = engine
        self.accountID = account.id
    }

    /// The account as stored now.
    public var account: Account {
        get throws { try engine.reading { try engine.loadAccount(id: accountID, db: $0) } }
    }

    /// The container with this identifier (`iCloud.com.example.app`) in `environment`, acting
    /// as this session. Development and production are separate data sets (R32).
    ///
    /// ```swift
    /// let live = try session.container("iCloud.com.example.app", environment: .production)
    /// ```
    public func container(_ identifier: String, environment: CloudEnvironment = .default) throws -> Container {
        guard !identifier.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ShareFlowError.invalid("a container identifier must not be empty")
        }
        try Naming.check(text: identifier, "container identifier")
        return Container(session: self, identifier: identifier, environment: environment)
    }
}

/// Which of a container's databases.
public enum DatabaseScope: String, Sendable, CaseIterable {
    case `private`, shared, `public`
}

/// A zone of a database.
public struct RecordZone: Hashable, Sendable, CustomStringConvertible {
    public let zoneID: RecordZoneID
    public var description: String { "RecordZone(\(zoneID.zoneName), owner: \(zoneID.ownerName))" }
}

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
        try engine.saveZone(name, in: self)
    }

    public func fetchAllRecordZones() throws -> [RecordZone] {
        try engine.fetchAllRecordZones(in: self)
    }

    /// The record, or `unknownItem`.
    public func fetchRecord(_ id: RecordID) throws -> Record {
        try engine.fetchRecord(id, in: self)
    }

    /// Each ID's record or error, in input order.
    public func fetchRecords(_ ids: [RecordID]) -> [(RecordID, Result<Record, ShareFlowError>)] {
        ids.map { id in
            do { return (id, .success(try engine.fetchRecord(id, in: self))) }
            catch { return (id, .failure(error as? ShareFlowError ?? ShareFlowError(.serviceUnavailable, "\(error)"))) }
        }
    }

    /// Saves and deletes records and shares. Each item is atomic (O6); in custom zones the
    /// call is too, unless `atomically` is false (R22). Saves check change tags as
    /// `savePolicy` says (R21).
    ///
    /// ```swift
    /// let result = try db.modifyRecords(saving: [trip, share])
    /// if let e = result.firstError, e.code == .serverRecordChanged { merge(e.serverRecord!) }
    /// ```
    public func modifyRecords(saving: [Record] = [], deleting: [RecordID] = [],
                              savePolicy: RecordSavePolicy = .ifServerRecordUnchanged,
                              atomically: Bool = true) throws -> ModifyResult {
        try engine.modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy, atomic: atomically, in: self)
    }

    /// The zone ID a new zone or record of this database gets for `name`.
    public func zoneID(_ name: String) throws -> RecordZoneID {
        RecordZoneID(zoneName: name, ownerName: databaseScope == .public ? Engine.publicOwnerName : try container.session.account.userRecordID)
    }
}

/// What a modify did, item by item in input order (saves, then deletes).
public struct ModifyResult {
    public var saved: [Record] = []
    public var deleted: [RecordID] = []
    public var saveResults: [(Record, Result<Record, ShareFlowError>)] = []
    public var deleteResults: [(RecordID, Result<Void, ShareFlowError>)] = []

    public var errors: [(item: String, error: ShareFlowError)] {
        saveResults.compactMap { r, res in if case .failure(let e) = res { return (r.recordID.description, e) }; return nil }
            + deleteResults.compactMap { id, res in if case .failure(let e) = res { return (id.description, e) }; return nil }
    }

    /// `partialFailure` when any item failed.
    public var error: ShareFlowError? {
        let errors = self.errors
        return errors.isEmpty ? nil : .partial(errors, of: saveResults.count + deleteResults.count)
    }
}
