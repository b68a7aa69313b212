import Foundation

/// What a zone's fetch ended at: the token to keep, the client's own token (ShareFlow keeps
/// none: always nil) and whether more changes wait.
public struct ZoneFetchEnd: Sendable {
    /// The token to pass as the zone's `previousServerChangeToken` next time.
    public let serverChangeToken: String
    /// Always nil: ShareFlow keeps no client token.
    public let clientChangeTokenData: Data?
    /// Whether more changes wait past the token: true only when `fetchAllChanges` is false.
    public let moreComing: Bool
}

/// O9 (CKFetchDatabaseChangesOperation): the zones changed, made or gone in the private or
/// shared database since a token, with Apple's block names, current and older.
///
/// ```swift
/// let op = FetchDatabaseChangesOperation(previousServerChangeToken: saved)
/// op.recordZoneWithIDChangedBlock = { zoneID in toFetch.append(zoneID) }
/// op.recordZoneWithIDWasDeletedBlock = { zoneID in drop(zoneID) }
/// op.fetchDatabaseChangesResultBlock = { result in saved = try? result.get().serverChangeToken }
/// op.database = container.sharedCloudDatabase
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class FetchDatabaseChangesOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// The token the last fetch ended at; nil: from the start.
    public var previousServerChangeToken: String?
    /// At most this many zones a page, 1 to 100,000 (a page holds at most 200); nil: 200.
    public var resultsLimit: Int?
    /// Pages on until nothing more comes (default); false: one page.
    public var fetchAllChanges = true
    /// Called for each zone made or changed since the token (in the shared database: one the
    /// caller sees, §14 S4).
    public var recordZoneWithIDChangedBlock: ((RecordZoneID) -> Void)?
    /// Called for each zone deleted since the token (in the shared database: also one the caller
    /// no longer has an accepted share in).
    public var recordZoneWithIDWasDeletedBlock: ((RecordZoneID) -> Void)?
    /// Called for each zone reported purged, which only a `zonePurged` fault rule does (§15):
    /// the data stay.
    public var recordZoneWithIDWasPurgedBlock: ((RecordZoneID) -> Void)?
    /// After each page but the last: the token to keep so far.
    public var changeTokenUpdatedBlock: ((String) -> Void)?
    /// Called once at the end: the token to keep and whether more changes wait, or the error.
    public var fetchDatabaseChangesResultBlock: ((Result<(serverChangeToken: String, moreComing: Bool), ShareFlowError>) -> Void)?
    /// The older name: token, moreComing, error.
    public var fetchDatabaseChangesCompletionBlock: ((String?, Bool, ShareFlowError?) -> Void)?

    /// An operation that fetches the changes since `previousServerChangeToken` (nil: all).
    public init(previousServerChangeToken: String? = nil) {
        self.previousServerChangeToken = previousServerChangeToken
    }

    /// As `databaseChanges(since:)` is to rules: a `changeTokenExpired` rule applies when a
    /// token is sent.
    override var entryPoint: EntryPoint { .databaseChanges(sentChangeToken: previousServerChangeToken != nil) }

    override func main(container: Container) {
        let db = database ?? container.privateCloudDatabase
        var token = previousServerChangeToken
        var moreComing = false
        do {
            while true {
                if isCancelled { throw ShareFlowError(.operationCancelled, "\(typeName) was cancelled") }
                let page = try db.databaseChanges(since: token, resultsLimit: resultsLimit)
                for zoneID in page.changedZoneIDs { recordZoneWithIDChangedBlock?(zoneID) }
                for (zoneID, reason) in page.deletions {
                    if reason == "purged" { recordZoneWithIDWasPurgedBlock?(zoneID) } else { recordZoneWithIDWasDeletedBlock?(zoneID) }
                }
                token = page.changeToken
                moreComing = page.moreComing
                guard moreComing, fetchAllChanges else { break }
                changeTokenUpdatedBlock?(page.changeToken)
            }
        } catch {
            self.error = .wrap(error)
        }
        if let error {
            fetchDatabaseChangesResultBlock?(.failure(error))
            fetchDatabaseChangesCompletionBlock?(nil, false, error)
        } else {
            fetchDatabaseChangesResultBlock?(.success((token ?? "", moreComing)))
            fetchDatabaseChangesCompletionBlock?(token, moreComing, nil)
        }
    }
}

/// O10 (CKFetchRecordZoneChangesOperation): each zone's records changed or deleted since its
/// token, with per-zone configurations and Apple's block names, current and older.
///
/// ```swift
/// let op = FetchRecordZoneChangesOperation(recordZoneIDs: [zoneID],
///     configurationsByRecordZoneID: [zoneID: .init(previousServerChangeToken: saved)])
/// op.recordWasChangedBlock = { id, result in if let r = try? result.get() { copy[id] = r } }
/// op.recordWithIDWasDeletedBlock = { id, _ in copy[id] = nil }
/// op.recordZoneFetchResultBlock = { zoneID, result in saved = try? result.get().serverChangeToken }
/// op.database = container.sharedCloudDatabase
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class FetchRecordZoneChangesOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// What to fetch from one zone, as Apple's `ZoneConfiguration`.
    public struct ZoneConfiguration: Sendable {
        /// The token the zone's last fetch ended at; nil: from the start.
        public var previousServerChangeToken: String?
        /// At most this many changes a page, 1 to 100,000 (a page holds at most 200); nil: 200.
        public var resultsLimit: Int?
        /// The fields each changed record comes with; nil: all.
        public var desiredKeys: [String]?

        /// A configuration; every part optional.
        public init(previousServerChangeToken: String? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil) {
            self.previousServerChangeToken = previousServerChangeToken
            self.resultsLimit = resultsLimit
            self.desiredKeys = desiredKeys
        }
    }

    /// The zones to fetch, each its own item (unset: `invalidArguments`, O4). Only custom zones
    /// have feeds.
    public var recordZoneIDs: [RecordZoneID]?
    /// Each zone's token and limits; a zone without one is fetched from the start.
    public var configurationsByRecordZoneID: [RecordZoneID: ZoneConfiguration]?
    /// Pages on in each zone until nothing more comes (default); false: one page a zone.
    public var fetchAllChanges = true
    /// Called for each record changed since the token, once, in its latest state, oldest change
    /// first (one entering the caller's view counts, §14 S3).
    public var recordWasChangedBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    /// The older name: each changed record.
    public var recordChangedBlock: ((Record) -> Void)?
    /// Called for each record deleted (or gone from the caller's view) since the token, with its
    /// record type.
    public var recordWithIDWasDeletedBlock: ((RecordID, String) -> Void)?
    /// After each page of a zone but its last: the token to keep so far.
    public var recordZoneChangeTokensUpdatedBlock: ((RecordZoneID, String?, Data?) -> Void)?
    /// Called once per zone, in input order, after its records: where it ended, or its error
    /// (the zone fails alone).
    public var recordZoneFetchResultBlock: ((RecordZoneID, Result<ZoneFetchEnd, ShareFlowError>) -> Void)?
    /// The older name: zone, token, client token, moreComing, error.
    public var recordZoneFetchCompletionBlock: ((RecordZoneID, String?, Data?, Bool, ShareFlowError?) -> Void)?
    /// Called once at the end: success, or the error (`partialFailure` when some zones failed,
    /// O3).
    public var fetchRecordZoneChangesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older name.
    public var fetchRecordZoneChangesCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that fetches the changes of `recordZoneIDs`, each from its configuration's token.
    public init(recordZoneIDs: [RecordZoneID]? = nil, configurationsByRecordZoneID: [RecordZoneID: ZoneConfiguration]? = nil) {
        self.recordZoneIDs = recordZoneIDs
        self.configurationsByRecordZoneID = configurationsByRecordZoneID
    }

    override var itemCount: Int { recordZoneIDs?.count ?? 0 }

    override func faultItems() -> [FaultItem] { (recordZoneIDs ?? []).map { FaultItem(zone: $0.zoneName) } }

    override func main(container: Container) {
        let db = database ?? container.privateCloudDatabase
        if let zones = recordZoneIDs {
            let failures = process(
                zones,
                id: \.description,
                body: { zoneID -> ZoneFetchEnd in
                    let configuration = configurationsByRecordZoneID?[zoneID] ?? ZoneConfiguration()
                    var token = configuration.previousServerChangeToken
                    while true {
                        if isCancelled { throw ShareFlowError(.operationCancelled, "\(typeName) was cancelled") }
                        let page = try db.recordZoneChanges(
                            zoneID,
                            since: token,
                            resultsLimit: configuration.resultsLimit,
                            desiredKeys: configuration.desiredKeys
                        )
                        for record in page.modifications {
                            recordWasChangedBlock?(record.recordID, .success(record))
                            recordChangedBlock?(record)
                        }
                        for deletion in page.deletions { recordWithIDWasDeletedBlock?(deletion.recordID, deletion.recordType) }
                        token = page.changeToken
                        guard page.moreComing, fetchAllChanges else {
                            return ZoneFetchEnd(serverChangeToken: page.changeToken, clientChangeTokenData: nil, moreComing: page.moreComing)
                        }
                        recordZoneChangeTokensUpdatedBlock?(zoneID, page.changeToken, nil)
                    }
                },
                deliver: { zoneID, result in
                    recordZoneFetchResultBlock?(zoneID, result)
                    switch result {
                    case .success(let end): recordZoneFetchCompletionBlock?(zoneID, end.serverChangeToken, nil, end.moreComing, nil)
                    case .failure(let e): recordZoneFetchCompletionBlock?(zoneID, nil, nil, false, e)
                    }
                }
            )
            error = completionError(failures, total: zones.count)
        } else {
            error = missing("recordZoneIDs")
        }
        fetchRecordZoneChangesResultBlock?(error.map { .failure($0) } ?? .success(()))
        fetchRecordZoneChangesCompletionBlock?(error)
    }
}
