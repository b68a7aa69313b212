import Foundation

/// One call each: the operation configured, run on the queue, and its results gathered. The
/// async forms are CloudKit's signatures; like the others, they run the queue at once on the
/// calling thread.
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

    /// Queues `operation` on the container's queue (O1); it runs when something waits for it.
    public func add(_ operation: CloudOperation) { queue.add(operation) }

    /// Runs the container's queue until no operation waits.
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

    /// Each URL's metadata or error, in input order; the error is the operation's.
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

    /// Each metadata's accepted share or error, in input order; the error is the operation's.
    public func acceptShareResults(_ metadatas: [ShareMetadata]) -> ([(ShareMetadata, Result<Share, ShareFlowError>)], ShareFlowError?) {
        var results: [(ShareMetadata, Result<Share, ShareFlowError>)] = []
        let op = AcceptSharesOperation(shareMetadatas: metadatas)
        op.qualityOfService = .userInitiated
        op.perShareResultBlock = { results.append(($0, $1)) }
        run(op)
        return (results, op.error)
    }

    /// Each URL's request (R39, O11), in input order; the error is the operation's. A URL
    /// that names no share, or a share that takes no requests, succeeds as one recorded does.
    public func requestShareAccessResults(_ urls: [String]) -> ([(String, Result<Void, ShareFlowError>)], ShareFlowError?) {
        var results: [(String, Result<Void, ShareFlowError>)] = []
        let op = ShareRequestAccessOperation(shareURLs: urls)
        op.qualityOfService = .userInitiated
        op.perShareAccessRequestResultBlock = { results.append(($0, $1)) }
        run(op)
        return (results, op.error)
    }

    /// The discoverable users among the caller's contacts, and the operation's error.
    public func discoverAllUserIdentityResults(progress: ((Int, Int) -> Void)? = nil) -> ([UserIdentity], ShareFlowError?) {
        var found: [UserIdentity] = []
        let op = DiscoverAllUserIdentitiesOperation()
        op.progressBlock = progress
        op.userIdentityDiscoveredBlock = { found.append($0) }
        run(op)
        return (found, op.error)
    }

    /// The discoverable users found for `requests` (a lookup that found none is left out), and
    /// the operation's error.
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

    /// Each URL's metadata or error, in input order. Throws only when the whole operation failed.
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

    /// Each metadata's accepted share or error, in input order. Throws only when the whole
    /// operation failed.
    public func accept(_ metadatas: [ShareMetadata]) async throws -> [(ShareMetadata, Result<Share, ShareFlowError>)] {
        let (results, error) = acceptShareResults(metadatas)
        if let error, error.code != .partialFailure { throw error }
        return results
    }

    /// The discoverable users among the caller's contacts; throws the operation's error.
    public func discoverAllUserIdentities() async throws -> [UserIdentity] {
        let (found, error) = discoverAllUserIdentityResults()
        if let error { throw error }
        return found
    }

    /// The discoverable users found for `lookupInfos`. Throws only when the whole operation
    /// failed: a lookup that failed alone is left out, as one that found no one.
    public func discoverUserIdentities(_ lookupInfos: [LookupInfo]) async throws -> [UserIdentity] {
        let (found, error) = discoverUserIdentityResults(lookupInfos.map(LookupRequest.init))
        if let error, error.code != .partialFailure { throw error }
        return found
    }
}
