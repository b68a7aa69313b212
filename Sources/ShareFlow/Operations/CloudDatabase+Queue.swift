extension CloudDatabase {
    /// Queues `operation` on the container to run against this database (CloudKit's
    /// `CKDatabase.add`): its `database` becomes this one. Only a database operation
    /// (`isDatabaseOperation`) is taken, and only once; another, or one added before, is
    /// `invalidArguments`, as CloudKit takes a `CKDatabaseOperation` only, once.
    ///
    /// ```swift
    /// let op = ModifyRecordZonesOperation(recordZoneIDsToDelete: [zone.zoneID])
    /// try container.privateCloudDatabase.add(op)
    /// ```
    public func add(_ operation: CloudOperation) throws {
        guard operation.isDatabaseOperation else {
            throw ShareFlowError.invalid("\(operation.typeName) is the container's: add it to the container, not to a database")
        }
        // Added once, as CloudKit raises on an operation added again: a second database must
        // not become the one a queued operation runs against.
        guard !operation.isQueued, !operation.isFinished else {
            throw ShareFlowError.invalid("\(operation.typeName) was already added; an operation runs once (make another)")
        }
        operation.database = self
        container.add(operation)
    }
}
