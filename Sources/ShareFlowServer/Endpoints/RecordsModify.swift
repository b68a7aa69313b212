import Foundation
import ShareFlow

/// `records/modify`: a request's operations translated into one engine call
/// (`CloudDatabase.modify`), each a `RecordChange` the engine decides in its own write
/// transaction (R21, R22, R26, R35, R36), and the answers in the order asked. Nothing here
/// reads the store: a change tag is compared, and an invitee looked up, where the write is.
enum RecordsModify {
    typealias Object = WireFormat.Object

    static let operationTypes = ["create", "update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"]

    /// records/modify: `create` (a new record; an existing name is EXISTS), `update` and
    /// `replace` (the copy at `recordChangeTag`: a stale one is CONFLICT), their `force` forms
    /// (no tag), `delete` and `forceDelete`. `atomic` (default true) is R22's.
    static func answer(_ call: EndpointCall) throws -> Object {
        let caller = try call.requireUser()
        let db = try call.database(as: caller)
        let body = call.body
        guard let ops = try WireFormat.items(body["operations"], field: "operations") else {
            throw CloudKitError.badRequest("operations is required")
        }
        let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: caller.userRecordID) ?? .default
        let atomic = try WireFormat.bool(body["atomic"], field: "atomic") ?? true
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        // Each operation as a change for the engine, or the error its wire form is.
        var items: [(name: String, change: Result<RecordChange, ShareFlowError>)] = []
        for (n, raw) in ops.enumerated() {
            guard let op = raw as? Object, let type = op["operationType"] as? String, let rec = op["record"] as? Object else {
                throw CloudKitError.badRequest("operations[\(n)] needs operationType and record")
            }
            let name = try WireFormat.string(rec["recordName"], field: "operations[\(n)].record.recordName") ?? UUID().uuidString
            guard operationTypes.contains(type) else {
                throw CloudKitError.badRequest(
                    "operations[\(n)].operationType '\(Naming.printable(String(type.prefix(40))))' is not one of \(operationTypes.joined(separator: ", "))"
                )
            }
            let given = try WireFormat.object(rec["fields"], field: "operations[\(n)].record.fields")
            if let given, given.count > ModifyLimits.maxFields {
                throw CloudKitError.badRequest(
                    "limitExceeded: operations[\(n)].record.fields has \(given.count) fields; a record holds at most \(ModifyLimits.maxFields)"
                )
            }
            do {
                items.append((name, .success(try change(n, type: type, rec, name: name, fields: given, zone: zone))))
            } catch let e as ShareFlowError {
                items.append((name, .failure(e)))
            }
        }
        // R22: an atomic request one of whose operations cannot even be read changes nothing.
        let unreadable = items.contains { if case .failure = $0.change { true } else { false } }
        if unreadable && atomic && !zone.isDefaultZone {
            return [
                "records": try items.map { item -> Object in
                    if case .failure(let e) = item.change { return try WireFormat.recordError(e, recordName: item.name) }
                    return WireFormat.recordError(
                        code: "ATOMIC_ERROR",
                        reason: "batchRequestFailed: another operation of this atomic request failed (R22)",
                        recordName: item.name
                    )
                }
            ]
        }
        var outcomes = try db.modify(items.compactMap { try? $0.change.get() }, atomically: atomic).makeIterator()
        return [
            "records": try items.map { item -> Object in
                if case .failure(let e) = item.change { return try WireFormat.recordError(e, recordName: item.name) }
                switch outcomes.next()! {
                case .success(.saved(let record)): return WireFormat.record(record, desiredKeys: desired, numbersAsStrings: asStrings)
                case .success(.deleted): return ["recordName": item.name, "deleted": true]
                case .failure(let e): return try WireFormat.recordError(e, recordName: item.name)
                }
            }
        ]
    }

    /// One operation's wire form as the change it asks for. A share (Apple spells its type
    /// `cloudkit.share` in requests) becomes a draft; every other record a record.
    private static func change(
        _ n: Int,
        type: String,
        _ rec: Object,
        name: String,
        fields given: Object?,
        zone: RecordZoneID
    ) throws -> RecordChange {
        let field = "operations[\(n)].record"
        let id = RecordID(recordName: name, zoneID: zone)
        let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
        let force = type.hasPrefix("force")
        if type == "delete" || type == "forceDelete" {
            // R21, checked by the engine in its transaction: a `delete` needs the current
            // change tag (none given never matches one); `forceDelete` does not.
            return .delete(id, tag: type == "delete" ? tag ?? "" : nil)
        }
        let recordType = try WireFormat.string(rec["recordType"], field: "\(field).recordType")
        if recordType?.lowercased() == Share.recordType {
            return .share(try ShareRecordWire.draft(n, rec, type: type, name: name, zone: zone))
        }
        guard let recordType else { throw CloudKitError.badRequest("\(field).recordType is required") }
        var fields: [String: FieldValue] = [:]
        // A field sent as `null`, or as `{ "value": null }` (pyicloud's Reminders clears a
        // date so), is no field: an update takes it off the server's record.
        var removing = Set<String>()
        for (key, value) in given ?? [:] {
            if value is NSNull || (value as? Object)?["value"] is NSNull {
                try Naming.check(fieldKey: key)
                removing.insert(key)
                continue
            }
            fields[key] = try WireFormat.fieldValue(value, field: key, zone: zone)
        }
        let parent = try WireFormat.object(rec["parent"], field: "\(field).parent")
            .flatMap { try WireFormat.string($0["recordName"], field: "\(field).parent.recordName") }
            .map { RecordID(recordName: $0, zoneID: zone) }
        let record = Record(recordType: recordType, recordID: id, fields: fields, parent: parent)
        // Apple: a record saved with createShortGUID gets the short GUID its share will have
        // (the share's URL token).
        record.requestsShortGUID = try WireFormat.bool(rec["createShortGUID"], field: "\(field).createShortGUID") ?? false
        switch type {
        case "create": return .create(record)
        case "update", "forceUpdate": return .update(record, tag: tag, force: force, removing: removing)
        default: return .replace(record, tag: tag, force: force)
        }
    }
}
