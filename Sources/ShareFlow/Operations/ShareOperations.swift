import Foundation

/// Turns lookup infos into participants to add to a share (R7), as
/// `CKFetchShareParticipantsOperation`. A container's operation: `database` is not used.
///
/// ```swift
/// let op = FetchShareParticipantsOperation(userIdentityLookupInfos: [LookupRequest(emailAddress: "bob@example.com")])
/// op.perShareParticipantResultBlock = { request, result in
///     if let participant = try? result.get() { share.addParticipant(participant) }
/// }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class FetchShareParticipantsOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// Who to look up (unset: `invalidArguments`, O4); an invalid entry fails alone.
    public var userIdentityLookupInfos: [LookupRequest]?
    /// Called once per lookup, in input order, with the participant or its error, as Apple's.
    public var perShareParticipantResultBlock: ((LookupRequest, Result<Participant, ShareFlowError>) -> Void)?
    /// The older block: called for each participant fetched.
    public var shareParticipantFetchedBlock: ((Participant) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` keyed by
    /// lookup value, O3), as Apple's.
    public var fetchShareParticipantsResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the operation's error, or nil.
    public var fetchShareParticipantsCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that looks up `userIdentityLookupInfos`.
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

/// Fetches share metadata by URL (R16), as `CKFetchShareMetadataOperation`: what the caller
/// learns of a share before accepting it. A container's operation: `database` is not used.
///
/// ```swift
/// let op = FetchShareMetadataOperation(shareURLs: [url])
/// op.shouldFetchRootRecord = true
/// op.perShareMetadataResultBlock = { url, result in if let metadata = try? result.get() { toAccept.append(metadata) } }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class FetchShareMetadataOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// The share URLs to resolve (unset: `invalidArguments`, O4).
    public var shareURLs: [String]?
    /// Whether each metadata carries the share's root record (never for a zone share), as Apple's.
    public var shouldFetchRootRecord = false
    /// With `shouldFetchRootRecord`: the fields the root record comes with; nil: all.
    public var rootRecordDesiredKeys: [String]?
    /// Called once per URL, in input order, with the metadata or its error, as Apple's.
    public var perShareMetadataResultBlock: ((String, Result<ShareMetadata, ShareFlowError>) -> Void)?
    /// The older per-URL block, as Apple's: the metadata or the error.
    public var perShareMetadataBlock: ((String, ShareMetadata?, ShareFlowError?) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` keyed by URL,
    /// O3), as Apple's.
    public var fetchShareMetadataResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the operation's error, or nil.
    public var fetchShareMetadataCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that resolves `shareURLs`.
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

/// Accepts shares, each atomically (R18, O5, O6), as `CKAcceptSharesOperation`: each accept
/// commits on its own, so one that failed leaves the others accepted. A container's operation:
/// `database` is not used.
///
/// ```swift
/// let op = AcceptSharesOperation(shareMetadatas: [metadata])
/// op.perShareResultBlock = { metadata, result in if case .failure(let error) = result { print(metadata.url, error.code) } }
/// op.acceptSharesResultBlock = { result in if case .success = result { refresh() } }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class AcceptSharesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// The metadata to accept, from `FetchShareMetadataOperation` (unset: `invalidArguments`,
    /// O4); one of another container or environment fails alone (O5).
    public var shareMetadatas: [ShareMetadata]?
    /// Called once per metadata, in input order, with the accepted share or its error, as Apple's.
    public var perShareResultBlock: ((ShareMetadata, Result<Share, ShareFlowError>) -> Void)?
    /// The older per-share block, as Apple's: the share or the error.
    public var perShareCompletionBlock: ((ShareMetadata, Share?, ShareFlowError?) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` keyed by the
    /// share's record ID, O3), as Apple's.
    public var acceptSharesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the operation's error, or nil.
    public var acceptSharesCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that accepts `shareMetadatas`.
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

/// Asks to join shares by URL (R39, O11), as `CKShareRequestAccessOperation`: each URL is asked
/// on its own, and succeeds whether or not anything was recorded (an unknown URL, a share that
/// takes no requests and a blocked caller answer as a recorded request does). A container's
/// operation: `database` is not used.
///
/// ```swift
/// let op = ShareRequestAccessOperation(shareURLs: [link])
/// op.perShareAccessRequestResultBlock = { url, result in if case .failure(let error) = result { print(url, error.code) } }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class ShareRequestAccessOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// The share URLs to ask for (unset: `invalidArguments`, O4).
    public var shareURLs: [String]?
    /// Called once per URL, in input order, with success or the URL's error, as Apple's.
    public var perShareAccessRequestResultBlock: ((String, Result<Void, ShareFlowError>) -> Void)?
    /// The older per-URL block, as Apple's: the URL's error, or nil.
    public var perShareAccessRequestCompletionBlock: ((String, ShareFlowError?) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` keyed by URL,
    /// O3), as Apple's.
    public var shareAccessRequestResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the operation's error, or nil.
    public var shareRequestAccessCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that asks to join the shares at `shareURLs`.
    public init(shareURLs: [String]? = nil) { self.shareURLs = shareURLs }

    override var itemCount: Int { shareURLs?.count ?? 0 }

    override func main(container: Container) {
        if let urls = shareURLs {
            do {
                let caller = try container.session.account
                let failures = process(
                    urls,
                    id: { $0 },
                    body: { url in _ = try container.engine.requestShareAccess(url: url, caller: caller, container: container.containerID) },
                    deliver: { url, result in
                        perShareAccessRequestResultBlock?(url, result)
                        if case .failure(let e) = result {
                            perShareAccessRequestCompletionBlock?(url, e)
                        } else {
                            perShareAccessRequestCompletionBlock?(url, nil)
                        }
                    }
                )
                error = completionError(failures, total: urls.count)
            } catch { self.error = .wrap(error) }
        } else {
            error = missing("shareURLs")
        }
        shareAccessRequestResultBlock?(error.map { .failure($0) } ?? .success(()))
        shareRequestAccessCompletionBlock?(error)
    }
}

/// Finds the discoverable users among the caller's contacts (R19), as
/// `CKDiscoverAllUserIdentitiesOperation`. A container's operation: `database` is not used.
///
/// ```swift
/// let op = DiscoverAllUserIdentitiesOperation()
/// op.userIdentityDiscoveredBlock = { identity in print(identity.userRecordID ?? "?", identity.contactIdentifiers) }
/// op.progressBlock = { done, total in print("\(done) of \(total) contacts") }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class DiscoverAllUserIdentitiesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// Called for each user found, once every contact has been read.
    public var userIdentityDiscoveredBlock: ((UserIdentity) -> Void)?
    /// Called every `Engine.Options.discoveryProgressInterval` contacts: (done, total).
    public var progressBlock: ((Int, Int) -> Void)?
    /// Called once at the end: success, or the error (`operationCancelled` after `cancel()`,
    /// O4), as Apple's.
    public var discoverAllUserIdentitiesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the error, or nil.
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

/// Finds the discoverable users behind given lookup infos (R20), as
/// `CKDiscoverUserIdentitiesOperation`. A container's operation: `database` is not used.
///
/// ```swift
/// let op = DiscoverUserIdentitiesOperation(userIdentityLookupInfos: [LookupRequest(emailAddress: "bob@example.com")])
/// op.userIdentityDiscoveredBlock = { identity, request in found[request.description] = identity }
/// container.add(op)
/// op.waitUntilFinished()
/// ```
public final class DiscoverUserIdentitiesOperation: CloudOperation {
    /// The container's, not a database's.
    override var faultDatabase: DatabaseScope? { nil }

    /// Who to look up (unset: `invalidArguments`, O4); an invalid entry fails alone.
    public var userIdentityLookupInfos: [LookupRequest]?
    /// Called for each lookup info that found a discoverable user.
    public var userIdentityDiscoveredBlock: ((UserIdentity, LookupRequest) -> Void)?
    /// Called once at the end: success, or the operation's error (`partialFailure` for the
    /// lookups that failed, O3); a lookup that found no discoverable user is no failure.
    public var discoverUserIdentitiesResultBlock: ((Result<Void, ShareFlowError>) -> Void)?
    /// The older completion, as Apple's: the operation's error, or nil.
    public var discoverUserIdentitiesCompletionBlock: ((ShareFlowError?) -> Void)?

    /// An operation that looks up `userIdentityLookupInfos`.
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
