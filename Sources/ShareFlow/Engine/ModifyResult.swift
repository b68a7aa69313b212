/// What a modify did, item by item in input order (saves, then deletes).
///
/// ```swift
/// let result = try db.modifyRecords(saving: [trip], deleting: [oldID])
/// if let error = result.error {                     // partialFailure (O3)
///     for (item, e) in error.partialErrors { print(item, e.code) }
/// }
/// ```
public struct ModifyResult {
    /// The records saved, as stored, in input order; each record given takes its saved state (R21, R31).
    public var saved: [Record] = []
    /// The IDs of the records deleted, in input order.
    public var deleted: [RecordID] = []
    /// Each record given, with the record saved or the item's error, in input order.
    public var saveResults: [(Record, Result<Record, ShareFlowError>)] = []
    /// Each record ID given, with its deletion's outcome, in input order.
    public var deleteResults: [(RecordID, Result<Void, ShareFlowError>)] = []

    /// Each failed item, named by its record ID, with its error, saves first; in an atomic call the
    /// items that did not fail themselves fail with `batchRequestFailed` (R22).
    public var errors: [(item: String, error: ShareFlowError)] {
        saveResults.compactMap { r, res in
            if case .failure(let e) = res { return (r.recordID.description, e) }
            return nil
        }
            + deleteResults.compactMap { id, res in
                if case .failure(let e) = res { return (id.description, e) }
                return nil
            }
    }

    /// `partialFailure` when any item failed.
    public var error: ShareFlowError? {
        let errors = self.errors
        return errors.isEmpty ? nil : .partial(errors, of: saveResults.count + deleteResults.count)
    }
}
