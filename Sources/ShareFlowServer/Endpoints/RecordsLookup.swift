import Foundation
import ShareFlow

/// `records/lookup`: records by name, each as the caller may see it, or its error in its place.
enum RecordsLookup {
    typealias Object = WireFormat.Object

    static func answer(_ call: EndpointCall) throws -> Object {
        let me = try call.reader()
        let db = try call.database(as: me)
        let body = call.body
        let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: me.userRecordID) ?? .default
        guard let items = try WireFormat.items(body["records"], field: "records") else { throw CloudKitError.badRequest("records is required") }
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        let maxBytes = call.api.maxResponseBytes
        // A name asked again is read once; every answer counts against the response's
        // budget, so 200 copies of a 1 MB record are not a 200 MB answer.
        var fetched: [String: Result<Record, ShareFlowError>] = [:]
        var budget = maxBytes
        return [
            "records": try items.enumerated().map { n, raw -> Object in
                guard let item = raw as? Object, let name = item["recordName"] as? String else {
                    throw CloudKitError.badRequest("records[\(n)].recordName is required")
                }
                // A record's own desiredKeys, else the request's.
                let keys = try WireFormat.strings(item["desiredKeys"], field: "records[\(n)].desiredKeys") ?? desired
                // Past the budget nothing more is read: the work and the memory stop there too.
                let overBudget = WireFormat.recordError(
                    code: "QUOTA_EXCEEDED",
                    reason:
                        "limitExceeded: this response carries at most \(maxBytes) bytes of records; ask for \(Naming.printable(name)) in another request",
                    recordName: name
                )
                guard budget > 0 else { return overBudget }
                let result =
                    fetched[name]
                    ?? Result { try db.fetchRecord(RecordID(recordName: name, zoneID: zone)) }
                    .mapError { $0 as? ShareFlowError ?? ShareFlowError(.serviceUnavailable, "\($0)").forOperator() }
                switch result {
                case .success(let record):
                    guard record.storedBytes <= budget else {
                        budget = 0
                        return overBudget
                    }
                    fetched[name] = result
                    budget -= record.storedBytes
                    return WireFormat.record(record, desiredKeys: keys, numbersAsStrings: asStrings)
                case .failure(let e):
                    fetched[name] = result
                    return try WireFormat.recordError(e, recordName: name)
                }
            }
        ]
    }
}
