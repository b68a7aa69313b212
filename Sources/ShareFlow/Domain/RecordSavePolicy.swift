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
    /// No tag check: the server's record becomes this copy, every key.
    case allKeys
}

/// The limits of one modify call (R22), CloudKit's.
public enum ModifyLimits {
    /// Records and record IDs in one call.
    public static let maxItems = 400
    /// Bytes of field data in one record, as stored.
    public static let maxRecordBytes = 1_000_000
}
