import Crypto
import Foundation
import ShareFlow

/// `records/query` (O7 underneath, R12 included): one page of a query, and a continuation
/// marker for the next (R33).
enum RecordsQuery {
    typealias Object = WireFormat.Object

    /// records/query: `query` {`recordType`, `filterBy`, `sortBy`}, `zoneID`, `resultsLimit`,
    /// `desiredKeys`, and `continuationMarker` to go on (O7 underneath, R12 included).
    static func answer(_ call: EndpointCall) throws -> Object {
        let caller = try call.reader()
        let db = try call.database(as: caller)
        let body = call.body
        guard let q = try WireFormat.object(body["query"], field: "query"),
            let type = try WireFormat.string(q["recordType"], field: "query.recordType")
        else {
            throw CloudKitError.badRequest("query.recordType is required")
        }
        let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: caller.userRecordID)
        var parts: [ShareFlow.Predicate] = []
        for (n, raw) in (try WireFormat.items(q["filterBy"], field: "query.filterBy") ?? []).enumerated() {
            let field = "query.filterBy[\(n)]"
            guard let f = raw as? Object, let comparator = f["comparator"] as? String else {
                throw CloudKitError.badRequest("\(field).comparator is required")
            }
            guard let key = (f["fieldName"] ?? f["systemFieldName"]) as? String else {
                throw CloudKitError.badRequest("\(field) needs fieldName or systemFieldName")
            }
            let name = WireFormat.systemFieldKeys[key] ?? key
            guard let rawValue = f["fieldValue"] else { throw CloudKitError.badRequest("\(field).fieldValue is required") }
            let value = try WireFormat.fieldValue(rawValue, field: "\(field).fieldValue", zone: zone ?? .default)
            let ops: [String: ShareFlow.Predicate.Comparison] = [
                "EQUALS": .equal, "NOT_EQUALS": .notEqual, "LESS_THAN": .less,
                "LESS_THAN_OR_EQUALS": .lessOrEqual, "GREATER_THAN": .greater,
                "GREATER_THAN_OR_EQUALS": .greaterOrEqual,
            ]
            if let op = ops[comparator] {
                parts.append(.compare(key: name, op: op, value: value))
            } else if comparator == "BEGINS_WITH", case .string(let prefix) = value {
                parts.append(.beginsWith(key: name, prefix: prefix))
            } else if comparator == "IN", case .list(let values) = value {
                guard values.count <= WireFormat.maxItems else {
                    throw CloudKitError.badRequest(
                        "limitExceeded: \(field).fieldValue has \(values.count) values for IN; a request holds at most \(WireFormat.maxItems)"
                    )
                }
                parts.append(.isIn(key: name, values: values))
            } else if comparator == "LIST_CONTAINS" {
                parts.append(.any(key: name, op: .equal, value: value))
            } else {
                throw CloudKitError.badRequest(
                    "\(field).comparator \(comparator) is not supported here (EQUALS, NOT_EQUALS, LESS_THAN, LESS_THAN_OR_EQUALS, GREATER_THAN, GREATER_THAN_OR_EQUALS, BEGINS_WITH with a string, IN with a list, LIST_CONTAINS)"
                )
            }
        }
        let sorts = try (WireFormat.items(q["sortBy"], field: "query.sortBy") ?? []).enumerated().map { n, raw -> ShareFlow.SortDescriptor in
            guard let o = raw as? Object, let key = (o["fieldName"] ?? o["systemFieldName"]) as? String else {
                throw CloudKitError.badRequest("query.sortBy[\(n)] needs fieldName or systemFieldName")
            }
            let ascending = try WireFormat.bool(o["ascending"], field: "query.sortBy[\(n)].ascending") ?? true
            return ShareFlow.SortDescriptor(key: WireFormat.systemFieldKeys[key] ?? key, ascending: ascending)
        }
        // R33: the marker is where the last page ended (its last record's sort values and
        // name), not an offset. It names what it belongs to — environment, database, zone,
        // caller and query — and a marker of anything else is refused, never a wrong page.
        let predicate: ShareFlow.Predicate = parts.isEmpty ? .all : parts.count == 1 ? parts[0] : .and(parts)
        let context = Self.markerContext(
            db,
            zone: zone,
            caller: caller,
            query: Query(recordType: type, predicate: predicate, sortDescriptors: sorts)
        )
        var after: QueryPosition?
        if let marker = body["continuationMarker"] {
            guard let s = marker as? String, s.utf8.count <= 65536, let data = Data(base64Encoded: s),
                let decoded = try? JSONDecoder().decode(QueryMarker.self, from: data)
            else {
                throw CloudKitError.badRequest("continuationMarker is not one this server gave for this query")
            }
            guard decoded.context == context, decoded.position.values.count == sorts.count else {
                throw CloudKitError.badRequest(
                    "continuationMarker belongs to another query, zone, database, environment or user; start this query without it"
                )
            }
            after = decoded.position
        }
        // Apple answers at most 200 records a page; more follow with the continuation marker.
        let limit = try WireFormat.integer(body["resultsLimit"], field: "resultsLimit", in: 1...Int(Int32.max)).map { min($0, 200) } ?? 200
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        _ = try WireFormat.bool(body["zoneWide"], field: "zoneWide")
        let page = try db.records(
            matching: Query(recordType: type, predicate: predicate, sortDescriptors: sorts),
            inZoneWith: zone,
            desiredKeys: desired,
            resultsLimit: limit,
            after: after,
            maxBytes: call.api.maxResponseBytes
        )
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        var o: Object = ["records": page.records.map { WireFormat.record($0, desiredKeys: desired, numbersAsStrings: asStrings) }]
        if let next = page.next, let data = try? JSONEncoder().encode(QueryMarker(position: next, context: context)) {
            o["continuationMarker"] = data.base64EncodedString()
        }
        return o
    }

    /// A continuation marker: where the page ended, and what query it is of.
    private struct QueryMarker: Codable {
        let position: QueryPosition
        let context: String
    }

    /// What a marker belongs to, as a digest: the environment, database, zone, caller and query.
    static func markerContext(_ db: CloudDatabase, zone: RecordZoneID?, caller: Account, query: Query) -> String {
        // The zone as the query reads it: no zoneID and `_defaultZone` without an owner are one
        // zone (CloudKit JS sends the first page without a zoneID and adds `_defaultZone` to
        // the continuation), as are the current user's name and the caller's record name.
        let zone = zone ?? .default
        let owner = zone.ownerName == RecordZoneID.currentUserName ? caller.userRecordID : zone.ownerName
        let text = [
            db.container.containerIdentifier, db.container.environment.rawValue, db.databaseScope.rawValue,
            zone.zoneName, owner, caller.userRecordID, query.recordType, "\(query.predicate)",
            query.sortDescriptors.map { "\($0.key) \($0.ascending)" }.joined(separator: ","),
        ].joined(separator: "\u{0}")
        return SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
