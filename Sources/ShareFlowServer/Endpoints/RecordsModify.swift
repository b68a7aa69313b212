import Foundation
import ShareFlow

/// `records/modify`: a request's operations planned into one engine modify (R21, R22, R35,
/// R36): each record as the operation type asks, shares built from their wire form
/// (`ShareRecordPlan`), and the answers in the order asked.
enum RecordsModify {
    typealias Object = WireFormat.Object

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
        _ = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings")
        // A companion is a share's root saved with it but not asked for (not in the response).
        enum Planned {
            case save(Record, RecordSavePolicy)
            case delete(RecordID, tag: String?)
            case failed(Object)
            case share(Int, Object, String)
            case companion(Record)
        }
        var plans: [(name: String, plan: Planned)] = []
        for (n, raw) in ops.enumerated() {
            guard let op = raw as? Object, let type = op["operationType"] as? String, let rec = op["record"] as? Object else {
                throw CloudKitError.badRequest("operations[\(n)] needs operationType and record")
            }
            let name = try WireFormat.string(rec["recordName"], field: "operations[\(n)].record.recordName") ?? UUID().uuidString
            let id = RecordID(recordName: name, zoneID: zone)
            let tag = try WireFormat.string(rec["recordChangeTag"], field: "operations[\(n)].record.recordChangeTag")
            // A share (Apple spells it cloudKit.share in requests): made below, once the records
            // of this request are known (its root is one of them, R5).
            guard ["create", "update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"].contains(type) else {
                throw CloudKitError.badRequest(
                    "operations[\(n)].operationType '\(Naming.printable(String(type.prefix(40))))' is not one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete"
                )
            }
            let given = try WireFormat.object(rec["fields"], field: "operations[\(n)].record.fields")
            if let given, given.count > ModifyLimits.maxFields {
                throw CloudKitError.badRequest(
                    "limitExceeded: operations[\(n)].record.fields has \(given.count) fields; a record holds at most \(ModifyLimits.maxFields)"
                )
            }
            let parentName = try WireFormat.object(rec["parent"], field: "operations[\(n)].record.parent")
                .map { try WireFormat.string($0["recordName"], field: "operations[\(n)].record.parent.recordName") }
            let wantsShortGUID = try WireFormat.bool(rec["createShortGUID"], field: "operations[\(n)].record.createShortGUID") ?? false
            if try WireFormat.string(rec["recordType"], field: "operations[\(n)].record.recordType")?.lowercased() == "cloudkit.share"
                && !type.hasSuffix("elete")
            {
                plans.append((name, .share(n, rec, type)))
                continue
            }
            do {
                switch type {
                case "delete", "forceDelete":
                    // R21, checked by the engine in its transaction: a `delete` needs the current
                    // change tag (none given never matches one); `forceDelete` does not.
                    plans.append((name, .delete(id, tag: type == "delete" ? tag ?? "" : nil)))
                case "create", "update", "forceUpdate", "replace", "forceReplace":
                    guard let recordType = try WireFormat.string(rec["recordType"], field: "operations[\(n)].record.recordType") else {
                        throw CloudKitError.badRequest("operations[\(n)].record.recordType is required")
                    }
                    var fields: [String: FieldValue] = [:]
                    for (key, value) in given ?? [:] {
                        fields[key] = try WireFormat.fieldValue(value, field: key, zone: zone)
                    }
                    var parent: RecordID?
                    if let pn = parentName ?? nil { parent = RecordID(recordName: pn, zoneID: zone) }
                    // Apple: a record saved with createShortGUID gets the short GUID its share
                    // will have (the share's URL token).
                    // R36: forceUpdate and forceReplace of a record that does not exist create it
                    // (Apple: "Creates a record if it doesn't exist"); update and replace stay NOT_FOUND.
                    var existing: Record?
                    if type != "create" {
                        do { existing = try db.fetchRecord(id) } catch let e as ShareFlowError where e.code == .unknownItem && type.hasPrefix("force")
                        {
                            existing = nil
                        }
                    }
                    guard let server = existing else {
                        let record = Record(recordType: recordType, recordID: id, fields: fields, parent: parent)
                        record.requestsShortGUID = wantsShortGUID
                        plans.append((name, .save(record, .ifServerRecordUnchanged)))
                        continue
                    }
                    if type == "update" || type == "replace" {
                        guard let tag, tag == server.recordChangeTag else {
                            throw ShareFlowError(
                                .serverRecordChanged,
                                "record \(name) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)"
                            )
                        }
                    }
                    // update merges the given fields into the server's; replace is the record given.
                    let merged = type.hasSuffix("pdate") ? server.fields.merging(fields) { _, new in new } : fields
                    let record = Record(
                        recordType: recordType,
                        recordID: id,
                        fields: merged,
                        parent: parent ?? (type.hasSuffix("pdate") ? server.parent : nil)
                    )
                    record.assumeServerCopy(of: server)
                    record.requestsShortGUID = wantsShortGUID
                    plans.append((name, .save(record, .ifServerRecordUnchanged)))
                default:
                    throw CloudKitError.badRequest(
                        "operations[\(n)].operationType '\(type)' is not one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete"
                    )
                }
            } catch let e as ShareFlowError {
                plans.append((name, .failed(try WireFormat.recordError(e, recordName: name))))
            }
        }
        var companions: [(name: String, plan: Planned)] = []
        for (index, item) in plans.enumerated() {
            guard case .share(let n, let rec, let type) = item.plan else { continue }
            do {
                var companion: Record?
                let share = try ShareRecordPlan.share(
                    n,
                    rec,
                    type: type,
                    name: item.name,
                    zone: zone,
                    db: db,
                    plans: plans.compactMap {
                        if case .save(let r, _) = $0.plan { return r }
                        return nil
                    },
                    companion: &companion
                )
                plans[index].plan = .save(share, .ifServerRecordUnchanged)
                if let companion { companions.append((companion.recordID.recordName, .companion(companion))) }
            } catch let e as ShareFlowError {
                plans[index].plan = .failed(try WireFormat.recordError(e, recordName: item.name))
            }
        }
        plans = companions + plans
        let precheckFailed = plans.contains { if case .failed = $0.plan { true } else { false } }
        if precheckFailed && atomic && !zone.isDefaultZone {
            return [
                "records": plans.compactMap { p -> Object? in
                    if case .companion = p.plan { return nil }
                    if case .failed(let o) = p.plan { return o }
                    return WireFormat.recordError(
                        code: "ATOMIC_ERROR",
                        reason: "batchRequestFailed: another operation of this atomic request failed (R22)",
                        recordName: p.name
                    )
                }
            ]
        }
        let saves = plans.compactMap { p -> Record? in
            switch p.plan {
            case .save(let r, _), .companion(let r): return r
            default: return nil
            }
        }
        let deletes = plans.compactMap { p -> RecordID? in
            if case .delete(let id, _) = p.plan { return id }
            return nil
        }
        var tags: [RecordID: String] = [:]
        for p in plans { if case .delete(let id, let tag?) = p.plan { tags[id] = tag } }
        let result = try db.modifyRecords(saving: saves, deleting: deletes, atomically: atomic, deletingOnlyAtTags: tags)
        var saved = result.saveResults.makeIterator()
        var deleted = result.deleteResults.makeIterator()
        // A companion's failure is its share's: the client asked for the share only.
        var companionFailure: ShareFlowError?
        return [
            "records": try plans.compactMap { p -> Object? in
                switch p.plan {
                case .companion:
                    if case .failure(let e) = saved.next()!.1 { companionFailure = e }
                    return nil
                case .failed(let o): return o
                case .save(let asked, _):
                    switch saved.next()!.1 {
                    case .success(let r): return WireFormat.record(r, desiredKeys: desired, numbersAsStrings: asStrings)
                    case .failure(let e):
                        if let root = companionFailure, asked is Share, e.code == .batchRequestFailed {
                            return try WireFormat.recordError(root.rephrased("the share's root record: \(root.message)"), recordName: p.name)
                        }
                        return try WireFormat.recordError(e, recordName: p.name)
                    }
                case .share: return WireFormat.recordError(code: "INTERNAL_ERROR", reason: "share \(p.name) was not planned", recordName: p.name)
                case .delete:
                    switch deleted.next()!.1 {
                    case .success: return ["recordName": p.name, "deleted": true]
                    case .failure(let e): return try WireFormat.recordError(e, recordName: p.name)
                    }
                }
            }
        ]
    }
}
