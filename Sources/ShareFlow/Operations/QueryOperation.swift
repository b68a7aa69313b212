import Foundation

/// Finds records by a query (O7), as `CKQueryOperation`: a `query` (or a `cursor` to go on
/// from), the zone to look in (the default zone when unset; required in the shared database),
/// `desiredKeys` and `resultsLimit`. Each match goes to `recordMatchedBlock`, then
/// `queryResultBlock` gets the cursor when more records match.
///
/// ```swift
/// let op = QueryOperation(query: Query(recordType: "Trip"))
/// op.zoneID = zone.zoneID
/// op.recordMatchedBlock = { id, result in print(id, result) }
/// op.queryResultBlock = { result in if case .success(let cursor?) = result { more(cursor) } }
/// container.add(op)
/// ```
public final class QueryOperation: CloudOperation {
    public var query: Query?
    public var cursor: QueryCursor?
    public var zoneID: RecordZoneID?
    public var desiredKeys: [String]?
    /// At most this many records; nil: all.
    public var resultsLimit: Int?
    public var recordMatchedBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    public var queryResultBlock: ((Result<QueryCursor?, ShareFlowError>) -> Void)?
    /// The older names (O2).
    public var recordFetchedBlock: ((Record) -> Void)?
    public var queryCompletionBlock: ((QueryCursor?, ShareFlowError?) -> Void)?

    public init(query: Query? = nil) { self.query = query }
    public init(cursor: QueryCursor) { self.cursor = cursor }

    override func faultItems() -> [FaultItem] {
        let zone = zoneID ?? cursor?.zoneID
        return [FaultItem(zone: zone?.zoneName ?? RecordZoneID.defaultZoneName, recordType: query?.recordType ?? cursor?.query.recordType)]
    }

    override func main(container: Container) {
        var next: QueryCursor?
        let db = database ?? container.privateCloudDatabase
        if query == nil && cursor == nil {
            error = missing("query or cursor")
        } else if isCancelled {
            error = ShareFlowError(.operationCancelled, "\(typeName) was cancelled")
        } else {
            do {
                let page =
                    try cursor.map { try db.records(continuingMatchFrom: $0, desiredKeys: desiredKeys, resultsLimit: resultsLimit) }
                    ?? db.records(matching: query!, inZoneWith: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
                for record in page.records {
                    recordMatchedBlock?(record.recordID, .success(record))
                    recordFetchedBlock?(record)
                }
                next = page.cursor
            } catch { self.error = .wrap(error) }
        }
        queryResultBlock?(error.map { .failure($0) } ?? .success(next))
        queryCompletionBlock?(next, error)
    }
}
