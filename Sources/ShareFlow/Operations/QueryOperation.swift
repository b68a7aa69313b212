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
/// op.waitUntilFinished()
/// ```
public final class QueryOperation: CloudOperation {
    /// A database operation: `CloudDatabase.add` takes it.
    override public var isDatabaseOperation: Bool { true }
    /// What to match: a record type, a predicate (O7's subset) and sort descriptors. Set this or
    /// `cursor` (neither: `invalidArguments`, O4).
    public var query: Query?
    /// Where an earlier page stopped (R33): the operation goes on with that page's query and
    /// zone, and wins over `query`. Set `database` to the one the cursor came from.
    public var cursor: QueryCursor?
    /// The zone to look in; nil: the default zone. Required in the shared database; unused with
    /// a `cursor`.
    public var zoneID: RecordZoneID?
    /// The fields each record comes with; nil: all, as Apple's.
    public var desiredKeys: [String]?
    /// At most this many records; nil: all.
    public var resultsLimit: Int?
    /// Called for each record of the page, in the query's order, with its ID and the record,
    /// as Apple's.
    public var recordMatchedBlock: ((RecordID, Result<Record, ShareFlowError>) -> Void)?
    /// Called once at the end with the cursor to go on from (nil: no more records match), or
    /// the operation's error, as Apple's.
    public var queryResultBlock: ((Result<QueryCursor?, ShareFlowError>) -> Void)?
    /// The older name of `recordMatchedBlock`: each record matched (O2).
    public var recordFetchedBlock: ((Record) -> Void)?
    /// The older name of `queryResultBlock`: the cursor and the error (O2).
    public var queryCompletionBlock: ((QueryCursor?, ShareFlowError?) -> Void)?

    /// An operation that runs `query`; set `zoneID` and the rest before adding it.
    public init(query: Query? = nil) { self.query = query }
    /// An operation that goes on from where an earlier page stopped.
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
