/// What a modify did, item by item in input order (saves, then deletes).
public struct ModifyResult {
    public var saved: [Record] = []
    public var deleted: [RecordID] = []
    public var saveResults: [(Record, Result<Record, ShareFlowError>)] = []
    public var deleteResults: [(RecordID, Result<Void, ShareFlowError>)] = []

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
