import Foundation

/// What every saved record satisfies, a share as much as any other: its names and values
/// (R23), its size (R22) and, under `ifServerRecordUnchanged`, its change tag (R21).
extension Engine {
    /// R23: names, keys and values a record may have.
    func checkNaming(_ record: Record, item: String) throws {
        // Before any key is looked at: a million keys cost nothing to refuse.
        guard record.fields.count <= ModifyLimits.maxFields else {
            throw ShareFlowError(
                .limitExceeded,
                "\(item) holds \(record.fields.count) fields; a record holds at most \(ModifyLimits.maxFields) (R22)"
            )
        }
        let id = record.recordID
        try Naming.check(recordName: id.recordName)
        try Naming.check(text: id.zoneID.zoneName, "zone name")
        try Naming.check(text: id.zoneID.ownerName, "zone owner")
        let isShare = record is Share
        if !isShare { try Naming.check(recordType: record.recordType) }
        for (key, value) in record.fields {
            // A share's own fields are CloudKit's (`cloudkit.title`).
            if !(isShare && key.hasPrefix("cloudkit.") && Naming.isSymbol(String(key.dropFirst(9)))) {
                do { try Naming.check(fieldKey: key) } catch let e as ShareFlowError { throw ShareFlowError.invalid("\(item): \(e.message)") }
            }
            if let problem = value.problem(key: key) { throw ShareFlowError.invalid("\(item): \(problem)") }
            // A share's fields are its title and thumbnail: no files (its bytes would have no
            // reader a share's participants reach through a record).
            if isShare && value.holdsAsset { throw ShareFlowError.invalid("\(item): field '\(key)' holds an asset; a share's fields hold none") }
        }
        if let parent = record.parent { try Naming.check(recordName: parent.recordName) }
    }

    /// R21 under `ifServerRecordUnchanged`: the copy saved is the server's current one.
    func checkChangeTag(
        _ record: Record,
        existing: RecordRow?,
        policy: RecordSavePolicy,
        zone: ZoneRow,
        caller: Account,
        item: String,
        db: StoreTransaction
    ) throws {
        guard policy == .ifServerRecordUnchanged else { return }
        let reason: String
        switch (existing, record.recordChangeTag) {
        case (nil, nil):
            return
        case (nil, let tag?):
            throw ShareFlowError(
                .unknownItem,
                "\(item) no longer exists on the server (this copy has change tag \(tag)); save it as a new record, or drop it"
            )
        case (let row?, nil):
            reason =
                "\(item) already exists on the server (change tag \(row.tag)); fetch it and change that copy, or save with savePolicy allKeys (R21)"
        case (let row?, let tag?):
            guard tag != row.tag else { return }
            reason =
                "\(item) changed on the server since this copy was fetched (copy's change tag \(tag), server's \(row.tag)); merge with the error's serverRecord and save again (R21)"
        }
        var error = ShareFlowError(.serverRecordChanged, reason)
        error.conflict = RecordConflict(
            server: try makeRecord(existing!, zone: zone, caller: caller, db: db),
            client: record.duplicate(),
            ancestor: record.ancestor()
        )
        throw error
    }

    /// R22: at most 1 MB of field data per record, as stored.
    func encodeFields(_ fields: [String: FieldValue], item: String) throws -> StoredFields {
        guard fields.count <= ModifyLimits.maxFields else {
            throw ShareFlowError(.limitExceeded, "\(item) holds \(fields.count) fields; a record holds at most \(ModifyLimits.maxFields) (R22)")
        }
        let stored = try StoredFields(fields)
        guard stored.byteCount <= ModifyLimits.maxRecordBytes else {
            throw ShareFlowError(
                .limitExceeded,
                "\(item) holds \(stored.byteCount) bytes of field data; a record holds at most \(ModifyLimits.maxRecordBytes) (R22)"
            )
        }
        return stored
    }
}
