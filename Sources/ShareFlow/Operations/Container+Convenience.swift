import Foundation

/// One call each: the operation configured, run on the queue, and its results gathered.
///
/// ```swift
/// let results = try await container.fetchShareParticipants([LookupInfo(emailAddress: "bob@example.com")])
/// for (info, result) in results { print(info, try result.get()) }
/// ```
extension Container {
    /// Adds `operation` to the queue and runs the queue until it has finished.
    public func run(_ operation: CloudOperation) {
        queue.add(operation)
        operation.waitUntilFinished()
    }

    public func add(_ operation: CloudOperation) { queue.add(operation) }

    public func waitUntilAllOperationsAreFinished() { queue.waitUntilAllOperationsAreFinished() }

    /// Each lookup's participant or error, in input order; the error is the operation's.
    public func fetchShareParticipantResults(_ requests: [LookupRequest]) -> ([(LookupRequest, Result<Participant, ShareFlowError>)], ShareFlowError?)
    {
        var results: [(LookupRequest, Result<Participant, ShareFlowError>)] = []
        let op = FetchShareParticipantsOperation(userIdentityLookupInfos: requests)
        op.qualityOfService = .userInitiated
        op.perShareParticipantResultBlock = { results.append(($0, $1)) }
        run(op)
        return (results, op.error)
    }

    public func fetchShareMetadataResults(
        _ urls: [String],
        shouldFetchRootRecord: Bool = false,
        rootRecordDesiredKeys: [String]? = nil
    ) -> ([(String, Result<ShareMetadata, ShareFlowError>)], ShareFlowError?) {
        var results: [(String, Result<ShareMetadata, ShareFlowError>)] = []
        let op = FetchShareMetadataOperation(shareURLs: urls)
        op.qualityOfService = .userInitiated
        op.shouldFetchRootRecord = shouldFetchRootRecord
        op.rootRecordDesiredKeys = rootRecordDesiredKeys
        op.perShareMetadataResultBlock = { results.append(($0, $1)) }
        run(op)
        return (results, op.error)
    }

    public func acceptShareResults(_ metadatas: [ShareMetadata]) -> ([(ShareMetadata, Result<Share, ShareFlowError>)], ShareFlowError?) {
        var results: [(ShareMetadata, Result<Share, ShareFlowError>)] = []
        let op = AcceptSharesOperation(shareMetadatas: metadatas)
        op.qualityOfService = .userInitiated
        op.perShareResultBlock = { results.append(($0, $1)) }
        run(op)
        return (results, op.error)
    }

    public func discoverAllUserIdentityResults(progress: ((Int, Int) -> Void)? = nil) -> ([UserIdentity], ShareFlowError?) {
        var found: [UserIdentity] = []
        let op = DiscoverAllUserIdentitiesOperation()
        op.progressBlock = progress
        op.userIdentityDiscoveredBlock = { found.append($0) }
        run(op)
        return (found, op.error)
    }

    public func discoverUserIdentityResults(_ requests: [LookupRequest]) -> ([UserIdentity], ShareFlowError?) {
        var found: [UserIdentity] = []
        let op = DiscoverUserIdentitiesOperation(userIdentityLookupInfos: requests)
        op.userIdentityDiscoveredBlock = { identity, _ in found.append(identity) }
        run(op)
        return (found, op.error)
    }

    // MARK: async forms, as CloudKit's

    /// Throws only when the whole operation failed; per-item failures are in the results.
    public func fetchShareParticipants(_ lookupInfos: [LookupInfo]) async throws -> [(LookupInfo, Result<Participant, ShareFlowError>)] {
        let (results, error) = fetchShareParticipantResults(lookupInfos.map(LookupRequest.init))
        if let error, error.code != .partialFailure { throw error }
        return results.map { ($0.0.info!, $0.1) }
    }

    public func fetchShareMetadata(
        _ urls: [String],
        shouldFetchRootRecord: Bool = false,
        rootRecordDesiredKeys: [String]? = nil
    ) async throws -> [(String, Result<ShareMetadata, ShareFlowError>)] {
        let (results, error) = fetchShareMetadataResults(
            urls,
            shouldFetchRootRecord: shouldFetchRootRecord,
            rootRecordDesiredKeys: rootRecordDesiredKeys
        )
        if let error, error.code != .partialFailure { throw error }
        return results
    }

    public func accept(_ metadatas: [ShareMetadata]) async throws -> [(ShareMetadata, Result<Share, ShareFlowError>)] {
        let (results, error) = acceptShareResults(metadatas)
        if let error, error.code != .partialFailure { throw error }
        return results
    }

    public func discoverAllUserIdentities() async throws -> [UserIdentity] {
        let (found, error) = discoverAllUserIdentityResults()
        if let error { throw error }
        return found
    }

    public func discoverUserIdentities(_ lookupInfos: [LookupInfo]) async throws -> [UserIdentity] {
        let (found, error) = discoverUserIdentityResults(lookupInfos.map(LookupRequest.init))
        if let error, error.code != .partialFailure { throw error }
        return found
    }
}
