extension Container {
    /// Operations added and not yet run, run in QoS order (O1, O4): made when first asked for,
    /// one per container object.
    ///
    /// ```swift
    /// container.queue.add(FetchRecordsOperation(recordIDs: [id]))
    /// container.queue.waitUntilAllOperationsAreFinished()
    /// ```
    public var queue: ContainerQueue {
        if let queue = operationQueue as? ContainerQueue { return queue }
        let queue = ContainerQueue(container: self)
        operationQueue = queue
        return queue
    }
}
