/// How a save treats the server's copy of a record (R21), as CloudKit's
/// `CKModifyRecordsOperation.RecordSavePolicy`.
///
/// ```swift
/// let op = ModifyRecordsOperation(recordsToSave: [trip])
/// op.savePolicy = .changedKeys     // merge my changed keys into whatever the server has
/// ```
public enum RecordSavePolicy: String, Sendable, CaseIterable {
    /// Save only a copy whose change tag is the server's current one; otherwise fail with
    /// `serverRecordChanged` and change nothing. A new record whose ID exists fails the same way.
    case ifServerRecordUnchanged
    /// No tag check: the keys changed on this copy (`changedKeys()`) are written over the
    /// server's record; its other keys stay as they are.
    case changedKeys
    /// No tag check: every key this copy holds is written over the server's record (and the
    /// keys removed from it are deleted); keys it never held stay (R29).
    case allKeys

    /// What a save of `record` writes over the fields stored now (`stored`; nil: no record yet),
    /// R29: a save never deletes a key the saved object did not hold. A copy fetched with
    /// `desiredKeys` holds only those keys, so the others are kept whatever the policy. Under
    /// `ifServerRecordUnchanged` and `changedKeys` only the keys changed on the copy since it
    /// was fetched (or all it holds, for a new object) are written; under `allKeys` every key
    /// it holds. A key set to nil on the copy is deleted.
    public func fieldsToWrite(of record: Record, over stored: [String: FieldValue]?) -> [String: FieldValue] {
        guard var fields = stored else { return record.fields }
        let changed = record.changedKeys()
        for key in changed { fields[key] = record.fields[key] }
        if self == .allKeys {
            for (key, value) in record.fields { fields[key] = value }
        }
        return fields
    }
}

/// The limits of one modify call (R22), CloudKit's.
public enum ModifyLimits {
    /// Records and record IDs in one call.
    public static let maxItems = 400
    /// Bytes of field data in one record, as stored.
    public static let maxRecordBytes = 1_000_000
    /// Keys in one record: each is checked, encoded and compared on every save, so their number
    /// is bounded like their bytes.
    public static let maxFields = 1_024
}
