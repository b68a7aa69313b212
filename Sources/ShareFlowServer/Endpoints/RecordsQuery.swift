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
            parts.append(try filter(raw, field: "query.filterBy[\(n)]", zone: zone ?? .default))
        }
        let sorts = try (WireFormat.items(q["sortBy"], field: "query.sortBy") ?? []).enumerated().map { n, raw -> ShareFlow.SortDescriptor in
            guard let o = raw as? Object, let key = (o["fieldName"] ?? o["systemFieldName"]) as? String else {
                throw CloudKitError.badRequest("query.sortBy[\(n)] needs fieldName or systemFieldName")
            }
            let ascending = try WireFormat.bool(o["ascending"], field: "query.sortBy[\(n)].ascending") ?? true
            var sort = ShareFlow.SortDescriptor(key: WireFormat.systemFieldKeys[key] ?? key, ascending: ascending)
            // By distance from a place (CloudKit's `relativeLocation`), nearest first.
            if let raw = o["relativeLocation"], !(raw is NSNull) {
                guard
                    case .location(let l) = try WireFormat.fieldValue(
                        ["value": raw, "type": "LOCATION"],
                        at: "query.sortBy[\(n)].relativeLocation",
                        zone: .default
                    ),
                    l.problem == nil
                else { throw CloudKitError.badRequest("query.sortBy[\(n)].relativeLocation must be a location within ±90 and ±180") }
                sort.relativeLocation = l
            }
            return sort
        }
        // R33: the marker is where the last page ended (its last record's sort values and
        // name), not an offset. It names what it belongs to — environment, database, zone,
        // caller and query — and a marker of anything else is refused, never a wrong page.
        let predicate: ShareFlow.Predicate = parts.isEmpty ? .all : parts.count == 1 ? parts[0] : .and(parts)
        // zoneWide: every zone the caller may read, one continuation across them (SPEC §13
        // wave 4); the zone named, if any, is not the query's.
        let zoneWide = try WireFormat.bool(body["zoneWide"], field: "zoneWide") ?? false
        let query = Query(recordType: type, predicate: predicate, sortDescriptors: sorts)
        let context = Self.markerContext(db, zone: zoneWide ? nil : zone, zoneWide: zoneWide, caller: caller, query: query)
        var after: QueryMarker?
        if let marker = body["continuationMarker"] {
            guard let s = marker as? String, s.utf8.count <= 65536, let data = Data(base64Encoded: s),
                let decoded = try? JSONDecoder().decode(QueryMarker.self, from: data)
            else {
                throw CloudKitError.badRequest("continuationMarker is not one this server gave for this query")
            }
            guard decoded.context == context, decoded.position.map({ $0.values.count == sorts.count }) ?? zoneWide,
                zoneWide == (decoded.zone != nil)
            else {
                throw CloudKitError.badRequest(
                    "continuationMarker belongs to another query, zone, database, environment or user; start this query without it"
                )
            }
            after = decoded
        }
        // Apple answers at most 200 records a page; more follow with the continuation marker.
        let limit = try WireFormat.integer(body["resultsLimit"], field: "resultsLimit", in: 1...Int(Int32.max)).map { min($0, 200) } ?? 200
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        let records: [Record]
        let next: QueryMarker?
        if zoneWide {
            let page = try db.recordsInEveryZone(
                matching: query,
                desiredKeys: desired,
                resultsLimit: limit,
                after: after?.zone.map {
                    CloudDatabase.ZoneWidePosition(zone: RecordZoneID(zoneName: $0[0], ownerName: $0[1]), position: after?.position)
                },
                maxBytes: call.api.maxResponseBytes
            )
            records = page.records
            next = page.next.map { QueryMarker(position: $0.position, context: context, zone: [$0.zone.zoneName, $0.zone.ownerName]) }
        } else {
            let page = try db.records(
                matching: query,
                inZoneWith: zone,
                desiredKeys: desired,
                resultsLimit: limit,
                after: after?.position,
                maxBytes: call.api.maxResponseBytes
            )
            records = page.records
            next = page.next.map { QueryMarker(position: $0, context: context, zone: nil) }
        }
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        var o: Object = ["records": records.map { WireFormat.record($0, desiredKeys: desired, numbersAsStrings: asStrings) }]
        if let next, let data = try? JSONEncoder().encode(next) {
            o["continuationMarker"] = data.base64EncodedString()
        }
        return o
    }

    /// The comparators of `filterBy` (SPEC §13) and what each makes of a field and a value.
    static let comparators = [
        "EQUALS", "NOT_EQUALS", "LESS_THAN", "LESS_THAN_OR_EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUALS", "BEGINS_WITH",
        "NOT_BEGINS_WITH", "IN", "NOT_IN", "LIST_CONTAINS", "NOT_LIST_CONTAINS", "LIST_CONTAINS_ANY", "LIST_CONTAINS_ALL",
        "CONTAINS_ALL_TOKENS", "CONTAINS_ANY_TOKENS", "NEAR",
    ]

    /// One `filterBy` item as a predicate: `comparator`, `fieldName` or `systemFieldName`,
    /// `fieldValue`, and `distance` (meters) for `NEAR`.
    static func filter(_ raw: Any, field: String, zone: RecordZoneID) throws -> ShareFlow.Predicate {
        guard let f = raw as? Object, let comparator = f["comparator"] as? String else {
            throw CloudKitError.badRequest("\(field).comparator is required")
        }
        guard let key = (f["fieldName"] ?? f["systemFieldName"]) as? String else {
            throw CloudKitError.badRequest("\(field) needs fieldName or systemFieldName")
        }
        let name = WireFormat.systemFieldKeys[key] ?? key
        guard let rawValue = f["fieldValue"] else { throw CloudKitError.badRequest("\(field).fieldValue is required") }
        let value = try WireFormat.fieldValue(rawValue, at: "\(field).fieldValue", zone: zone)
        func list(_ comparator: String) throws -> [FieldValue] {
            guard case .list(let values) = value else { throw CloudKitError.badRequest("\(field).fieldValue must be a list for \(comparator)") }
            guard values.count <= WireFormat.maxItems else {
                throw CloudKitError.badRequest(
                    "limitExceeded: \(field).fieldValue has \(values.count) values for \(comparator); a request holds at most \(WireFormat.maxItems)"
                )
            }
            return values
        }
        func text(_ comparator: String) throws -> String {
            guard case .string(let s) = value else { throw CloudKitError.badRequest("\(field).fieldValue must be a string for \(comparator)") }
            return s
        }
        switch comparator {
        case "EQUALS": return .compare(key: name, op: .equal, value: value)
        case "NOT_EQUALS": return .compare(key: name, op: .notEqual, value: value)
        case "LESS_THAN": return .compare(key: name, op: .less, value: value)
        case "LESS_THAN_OR_EQUALS": return .compare(key: name, op: .lessOrEqual, value: value)
        case "GREATER_THAN": return .compare(key: name, op: .greater, value: value)
        case "GREATER_THAN_OR_EQUALS": return .compare(key: name, op: .greaterOrEqual, value: value)
        case "BEGINS_WITH": return .beginsWith(key: name, prefix: try text(comparator))
        case "NOT_BEGINS_WITH": return .not(.beginsWith(key: name, prefix: try text(comparator)))
        case "IN": return .isIn(key: name, values: try list(comparator))
        case "NOT_IN": return .not(.isIn(key: name, values: try list(comparator)))
        case "LIST_CONTAINS": return .any(key: name, op: .equal, value: value)
        case "NOT_LIST_CONTAINS": return .not(.any(key: name, op: .equal, value: value))
        case "LIST_CONTAINS_ANY": return .listContains(key: name, values: try list(comparator), all: false)
        case "LIST_CONTAINS_ALL": return .listContains(key: name, values: try list(comparator), all: true)
        case "CONTAINS_ANY_TOKENS": return .tokens(key: name, tokens: [try text(comparator)], all: false)
        case "CONTAINS_ALL_TOKENS": return .tokens(key: name, tokens: [try text(comparator)], all: true)
        case "NEAR":
            guard case .location(let center) = value, center.problem == nil else {
                throw CloudKitError.badRequest("\(field).fieldValue must be a location for NEAR")
            }
            guard let number = f["distance"] as? NSNumber, !WireFormat.isBool(number), number.doubleValue.isFinite, number.doubleValue >= 0 else {
                throw CloudKitError.badRequest("\(field).distance (meters, 0 or more) is required for NEAR")
            }
            return .near(key: name, center: center, meters: number.doubleValue)
        default:
            throw CloudKitError.badRequest(
                "\(field).comparator \(comparator) is not one of \(comparators.joined(separator: ", "))"
            )
        }
    }

    /// A continuation marker: where the page ended, and what query it is of; for a zone-wide
    /// query, the zone it ended in (its name and owner) and no position when at its start.
    private struct QueryMarker: Codable {
        let position: QueryPosition?
        let context: String
        let zone: [String]?

        /// Only a zone of two names: a marker is the client's to send back, changed or not.
        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            position = try c.decodeIfPresent(QueryPosition.self, forKey: .position)
            context = try c.decode(String.self, forKey: .context)
            zone = try c.decodeIfPresent([String].self, forKey: .zone)
            if let zone, zone.count != 2 { throw DecodingError.dataCorruptedError(forKey: .zone, in: c, debugDescription: "a zone is two names") }
        }

        init(position: QueryPosition?, context: String, zone: [String]?) {
            self.position = position
            self.context = context
            self.zone = zone
        }
    }

    /// What a marker belongs to, as a digest: the environment, database, zone, caller and query.
    static func markerContext(_ db: CloudDatabase, zone: RecordZoneID?, zoneWide: Bool = false, caller: Account, query: Query) -> String {
        // The zone as the query reads it: no zoneID and `_defaultZone` without an owner are one
        // zone (CloudKit JS sends the first page without a zoneID and adds `_defaultZone` to
        // the continuation), as are the current user's name and the caller's record name.
        let zone = zone ?? .default
        let owner = zone.ownerName == RecordZoneID.currentUserName ? caller.userRecordID : zone.ownerName
        let text = [
            db.container.containerIdentifier, db.container.environment.rawValue, db.databaseScope.rawValue,
            zoneWide ? "\u{1}every zone" : zone.zoneName, owner, caller.userRecordID, query.recordType, "\(query.predicate)",
            query.sortDescriptors.map { "\($0.key) \($0.ascending) \($0.relativeLocation.map { "\($0)" } ?? "")" }.joined(separator: ","),
        ].joined(separator: "\u{0}")
        return SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
