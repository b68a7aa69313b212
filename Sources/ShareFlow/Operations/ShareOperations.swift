import Foundation

/// A lookup as given to an operation: valid (R1) or the error naming the bad value, so one
/// malformed item fails alone.
public struct LookupRequest: Hashable, Sendable, CustomStringConvertible {
    public let result: Result<LookupInfo, ShareFlowError>
    /// The value as given, the item's ID in `partialErrors`.
    public let given: String

    public init(_ info: LookupInfo) {
        result = .success(info)
        given = info.value
    }

    public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordID: String? = nil) {
        given = emailAddress ?? phoneNumber ?? userRecordID ?? "(empty lookup info)"
        do { result = .success(try LookupInfo(emailAddress: emailAddress, phoneNumber: phoneNumber, userRecordID: userRecordID)) } catch {
            result = .failure(.wrap(error))
        }
    }

    public var info: LookupInfo? { try? result.get() }
    public var description: String { (try? result.get().value) ?? given }

    public static func == (a: LookupRequest, b: LookupRequest) -> Bool { a.given == b.given && a.info == b.info }
    public func hash(into h: inout Hasher) { h.combine(given) }
}

/// Turns lookup infos into participants to add to a share (R7).
public final class FetchShareParticipantsOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    public var userIdentityLookupInfos: [LookupRequest]?
    public var perShareParticipantResultBlock: ((LookupRequest, Result<Participant, ShareFlowError>) -> Void)?
    /// The older block: called for each participant fetched.
    public var shareParticipantFetchedBlock: ((Participant) -> Void)?
    public var fetchShareParticipantsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var fetchShareParticipantsCompletionBlock: ((ShareFlowError?) -> Void)?

    public init(userIdentityLookupInfos: [LookupRequest]? = nil) {
        self.userIdentityLookupInfos = userIdentityLookupInfos
    }

    override var itemCount: Int { userIdentityLookupInfos?.count ?? 0 }

    override func main(container: Container) {
        var failures: [(item: String, error: ShareFlowError)] = []
        if let inputs = userIdentityLookupInfos {
            do {
                let caller = try container.session.account
                // One transaction for the batch: no per-item round trip to the store; events
                // are delivered when it ends, and callbacks may still write (savepoints).
                failures = try container.engine.transaction { _ in
                    process(
                        inputs,
                        id: \.description,
                        body: { request in
                            try container.engine.fetchShareParticipant(
                                try request.result.get(),
                                caller: caller,
                                container: container.containerIdentifier
                            )
                        },
                        deliver: { request, result in
                            perShareParticipantResultBlock?(request, result)
                            if case .success(let p) = result { shareParticipantFetchedBlock?(p) }
                        }
                    )
                }
                error = completionError(failures, total: inputs.count)
            } catch { self.error = .wrap(error) }
        } else {
            error = missing("userIdentityLookupInfos")
        }
        fetchShareParticipantsResultBlock?(error.map { .failure($0) } ?? .success(()))
        fetchShareParticipantsCompletionBlock?(error)
    }
}

/// Fetches share metadata by URL (R16).
public final class FetchShareMetadataOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    public var shareURLs: [String]?
    public var shouldFetchRootRecord = false
    public var rootRecordDesiredKeys: [String]?
    public var perShareMetadataResultBlock: ((String, Result<ShareMetadata, ShareFlowError>) -> Void)?
    public var perShareMetadataBlock: ((String, ShareMetadata?, ShareFlowError?) -> Void)?
    public var fetchShareMetadataResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var fetchShareMetadataCompletionBlock: ((ShareFlowError?) -> Void)?

    public init(shareURLs: [String]? = nil) { self.shareURLs = shareURLs }

    override var itemCount: Int { shareURLs?.count ?? 0 }

    override func main(container: Container) {
        if let urls = shareURLs {
            do {
                let caller = try container.session.account
                let failures = process(
                    urls,
                    id: { $0 },
                    body: { url in
                        try container.engine.fetchShareMetadata(
                            url: url,
                            caller: caller,
                            container: container.containerID,
                            shouldFetchRootRecord: shouldFetchRootRecord,
                            rootRecordDesiredKeys: rootRecordDesiredKeys
                        )
                    },
                    deliver: { url, result in
                        perShareMetadataResultBlock?(url, result)
                        switch result {
                        case .success(let m): perShareMetadataBlock?(url, m, nil)
                        case .failure(let e): perShareMetadataBlock?(url, nil, e)
                        }
                    }
                )
                error = completionError(failures, total: urls.count)
            } catch { self.error = .wrap(error) }
        } else {
            error = missing("shareURLs")
        }
        fetchShareMetadataResultBlock?(error.map { .failure($0) } ?? .success(()))
        fetchShareMetadataCompletionBlock?(error)
    }
}

/// Accepts shares, each atomically (R18, O5, O6).
public final class AcceptSharesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    public var shareMetadatas: [ShareMetadata]?
    public var perShareResultBlock: ((ShareMetadata, Result<Share, ShareFlowError>) -> Void)?
    public var perShareCompletionBlock: ((ShareMetadata, Share?, ShareFlowError?) -> Void)?
    public var acceptSharesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var acceptSharesCompletionBlock: ((ShareFlowError?) -> Void)?

    public init(shareMetadatas: [ShareMetadata]? = nil) { self.shareMetadatas = shareMetadatas }

    override var itemCount: Int { shareMetadatas?.count ?? 0 }

    override func main(container: Container) {
        if let metadatas = shareMetadatas {
            do {
                let caller = try container.session.account
                // One transaction per accept, not one per batch with savepoints: an accept
                // reported done must survive a crash (SPEC §11, O6; CrashTests), and batching
                // measured only ~5% faster (the commit is not what an accept costs).
                let failures = process(
                    metadatas,
                    id: { $0.share.recordID.description },
                    body: { metadata in
                        try container.engine.acceptShare(metadata, caller: caller, container: container.containerID)
                    },
                    deliver: { metadata, result in
                        perShareResultBlock?(metadata, result)
                        switch result {
                        case .success(let s): perShareCompletionBlock?(metadata, s, nil)
                        case .failure(let e): perShareCompletionBlock?(metadata, nil, e)
                        }
                    }
                )
                error = completionError(failures, total: metadatas.count)
            } catch { self.error = .wrap(error) }
        } else {
            error = missing("shareMetadatas")
        }
        acceptSharesResultBlock?(error.map { .failure($0) } ?? .success(()))
        acceptSharesCompletionBlock?(error)
    }
}

/// Finds the discoverable users among the caller's contacts (R19).
public final class DiscoverAllUserIdentitiesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    public var userIdentityDiscoveredBlock: ((UserIdentity) -> Void)?
    /// Called every `Engine.Options.discoveryProgressInterval` contacts: (done, total).
    public var progressBlock: ((Int, Int) -> Void)?
    public var discoverAllUserIdentitiesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var discoverAllUserIdentitiesCompletionBlock: ((ShareFlowError?) -> Void)?
    private var found = 0

    public override init() {}

    override var itemCount: Int { found }

    override func main(container: Container) {
        do {
            let caller = try container.session.account
            let identities = try container.engine.discoverAllUserIdentities(
                caller: caller,
                container: container.containerIdentifier,
                progress: progressBlock,
                isCancelled: { isCancelled }
            )
            found = identities.count
            for identity in identities { userIdentityDiscoveredBlock?(identity) }
            if isCancelled { error = ShareFlowError(.operationCancelled, "\(typeName) was cancelled") }
        } catch {
            self.error = .wrap(error)
        }
        discoverAllUserIdentitiesResultBlock?(error.map { .failure($0) } ?? .success(()))
        discoverAllUserIdentitiesCompletionBlock?(error)
    }
}

/// Finds the discoverable users behind given lookup infos (R20).
public final class DiscoverUserIdentitiesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    public var userIdentityLookupInfos: [LookupRequest]?
    /// Called for each lookup info that found a discoverable user.
    public var userIdentityDiscoveredBlock: ((UserIdentity, LookupRequest) -> Void)?
    public var discoverUserIdentitiesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    public var discoverUserIdentitiesCompletionBlock: ((ShareFlowError?) -> Void)?

    public init(userIdentityLookupInfos: [LookupRequest]? = nil) { self.userIdentityLookupInfos = userIdentityLookupInfos }

    override var itemCount: Int { userIdentityLookupInfos?.count ?? 0 }

    override func main(container: Container) {
        if let inputs = userIdentityLookupInfos {
            do {
                let caller = try container.session.account
                let failures = process(
                    inputs,
                    id: \.description,
                    body: { request in
                        try container.engine.discoverUserIdentity(
                            try request.result.get(),
                            caller: caller,
                            container: container.containerIdentifier
                        )
                    },
                    deliver: { request, result in
                        if case .success(let identity?) = result { userIdentityDiscoveredBlock?(identity, request) }
                    }
                )
                error = completionError(failures, total: inputs.count)
            } catch { self.error = .wrap(error) }
        } else {
            error = missing("userIdentityLookupInfos")
        }
        discoverUserIdentitiesResultBlock?(error.map { .failure($0) } ?? .success(()))
        discoverUserIdentitiesCompletionBlock?(error)
    }
}
