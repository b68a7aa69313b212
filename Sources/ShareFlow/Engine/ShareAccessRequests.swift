import Foundation

/// Access requests (SPEC §17): asking to join a share (R39), what a share's save does with its
/// requesters and blocked identities (R41, R42), and how both show (R40).
extension Engine {
    /// What one URL's request came to (R39), for the operation and the events.
    public enum AccessRequestOutcome: Equatable, Sendable {
        /// Recorded, or refreshed.
        case recorded
        /// Nothing recorded and nothing said: an unknown URL, a share that takes no requests, a
        /// blocked caller (R39's uniform answer), or the caller is on the share already.
        case silent
        /// Past `sharing.maxRequesters` (R42): dropped, with the same answer.
        case dropped
        /// A `share.requestAccess` policy approved the requester at once (SPEC §17).
        case approved
    }

    /// A `share.requestAccess` policy's approval (SPEC §17), with the owner's authority: the
    /// request is recorded and the owner's share saved with the requester added, in this
    /// transaction — so the add passes the owner's `participant.add` and `share.save` policies,
    /// R8 and R42 as any approval does, and the participant is `pending`, an approved requester.
    private func approve(
        _ caller: Account,
        as approval: PolicySet.Approval,
        row: ShareRow,
        zone: ZoneRow,
        owner: Account,
        item: String,
        db: StoreTransaction
    ) throws {
        try db.recordAccessRequest(share: row.id, account: caller.id, lookup: caller.primaryLookup, at: EngineClock.seconds)
        let share = try makeShare(row, zone: zone, caller: owner, db: db)
        share.approveRequesters(
            share.requesters.filter { $0.userIdentity.userRecordID == caller.userRecordID },
            permission: approval.permission,
            role: approval.role
        )
        let database = try Session(engine: self, account: owner).container(zone.container.identifier, environment: zone.container.environment)
            .privateCloudDatabase
        _ = try saveShare(share, in: database, caller: owner, policy: .ifServerRecordUnchanged, savedInThisCall: [], db: db)
    }

    /// R39: `caller` asks to join the share at `url`. Success says nothing of the share: an
    /// unknown URL, one of the other environment, a share that takes no requests and a blocked
    /// caller all succeed with nothing recorded, each after the same one-statement read. A
    /// `pending` participant gets `participantAlreadyInvited`, a public share `invalidArguments`.
    ///
    /// ```swift
    /// try engine.requestShareAccess(url: link, caller: dana, container: ContainerID("iCloud.t"))
    /// ```
    @discardableResult
    public func requestShareAccess(url: String, caller: Account, container containerID: ContainerID) throws -> AccessRequestOutcome {
        try enter(.containerCall) {
            let token = Engine.shareToken(url: url) ?? ""
            let item = "share at \(url)"
            // Every caller's request starts with the same read (R27): whether it goes on to a
            // write is decided by what it found.
            let first = try reading { db in try db.probeAccessRequest(token: token, container: containerID, caller: caller.id) }
            guard try Engine.accessRequestGoesOn(first, item: item) else { return .silent }
            let scope = try reading { db -> StoreWriteScope in
                guard store.writersRunAtOnce, let found = try shareAndZone(url: url, environment: containerID.environment, db: db) else {
                    return .wholeStore
                }
                return .zones([found.zone.lockKey])
            }
            return try transaction(scope: scope) { db in
                // The share's zone is claimed (a PostgreSQL node holds it): the cap and the one
                // request per account hold across processes (R42, M2).
                guard let (row, zone) = try shareAndZone(url: url, environment: containerID.environment, db: db) else { return .silent }
                let probe = try db.probeAccessRequest(token: token, container: containerID, caller: caller.id)
                guard probe.share == row.id, try Engine.accessRequestGoesOn(probe, item: item) else { return .silent }
                let owner = try owner(of: zone, db: db)
                let ownersView = { [unowned self] in try makeShare(row, zone: zone, caller: owner, db: db) }
                let requester = Engine.requester(caller)
                // The owner's policies: a denial is the one answer the requester may tell apart
                // (the share takes requests and its owner said no); an approval adds them now.
                if policies.hasPolicies(.shareRequestAccess) {
                    let objects = PolicyRequest.Objects(
                        share: { [link, row, zone, owner] in
                            guard let engine = link.engine else { return nil }
                            return try engine.reading { db in try engine.makeShare(row, zone: zone, caller: owner, db: db) }
                        },
                        participant: { nil },
                        metadata: nil,
                        proposed: { [link, row, zone, owner, requester] in
                            // SPEC §18 P2: the share with this request among its requesters.
                            guard let engine = link.engine else { return nil }
                            let stored = try engine.reading { db in try engine.makeShare(row, zone: zone, caller: owner, db: db) }
                            let proposed = stored.proposed(over: stored, owner: nil, asShown: true)
                            proposed.requesters.append(requester)
                            return proposed
                        }
                    )
                    objects.url = url
                    objects.requester = requester
                    objects.environment = zone.container.environment.rawValue
                    let request = PolicyRequest(point: .shareRequestAccess, caller: caller, container: zone.container.identifier, objects: objects)
                    let (changed, approval) = try askPoliciesForApproval(request, item: item, db: db)
                    if changed {
                        // A policy wrote to the store: the request goes on from it as it is now.
                        let now = try db.probeAccessRequest(token: token, container: containerID, caller: caller.id)
                        guard now.share == row.id, try Engine.accessRequestGoesOn(now, item: item) else { return .silent }
                    }
                    if let approval {
                        do {
                            try approve(caller, as: approval, row: row, zone: zone, owner: owner, item: item, db: db)
                        } catch let error as ShareFlowError where error.code != .serviceUnavailable {
                            // The owner's save refused the add (a participant.add or share.save
                            // policy, R8, R42): the requester learns no more than a denial tells
                            // (R16, R27) — never the share's title, size or the owner's reasons;
                            // the whole error goes to the operator's log.
                            throw ShareFlowError.denied(
                                "\(item): policy '\(approval.policy)' approved the request, but the owner's save refused the add: \(error.message)"
                            ).forOperator(outage: false, client: "\(item): the request was not approved")
                        }
                        return .approved
                    }
                }
                // Asked again soon: the same success, nothing changed — one account asking in a
                // loop would otherwise renew the share's tag (R43) faster than its owner could
                // save it (ShareFlow's choice: `Options.requestRefreshSeconds`).
                if let last = probe.requestedAt, EngineClock.seconds - last < options.requestRefreshSeconds { return .silent }
                if !probe.hasRequest, probe.openRequests >= options.maxRequesters {
                    var event = Event(.shareAccessRequestDropped, caller: caller, container: zone.container.identifier)
                    event.share = try ownersView()
                    event.url = url
                    event.reason = "tooManyRequests"
                    event.access = AccessEventDetails(requesters: [requester])
                    emit(event)
                    return .dropped
                }
                try db.recordAccessRequest(share: row.id, account: caller.id, lookup: caller.primaryLookup, at: EngineClock.seconds)
                let share = try ownersView()
                var event = Event(.shareAccessRequested, caller: caller, container: zone.container.identifier)
                event.share = share
                event.url = url
                event.access = AccessEventDetails(
                    requesters: share.requesters.filter { $0.userIdentity.userRecordID == caller.userRecordID }
                )
                emit(event)
                return .recorded
            }
        }
    }

    /// R39 on what the probe read: whether the request is to be recorded (or dropped past the
    /// cap). Throws the two answers that differ from silence.
    private static func accessRequestGoesOn(_ probe: AccessRequestProbe, item: String) throws -> Bool {
        guard probe.share != nil else { return false }
        if probe.isPublic {
            throw ShareFlowError.invalid("\(item): a public share is joined by accepting it, not by asking (R39)")
        }
        switch probe.status {
        case .pending:
            throw ShareFlowError(.participantAlreadyInvited, "\(item): you are invited already; accept the invitation (R39)")
        case .accepted: return false
        case .removed, .unknown, nil: break
        }
        if probe.role == .owner { return false }
        return probe.allowsRequests && !probe.isBlocked
    }

    /// The requester an account makes, as the owner sees it (R40): by asking, it shows its
    /// name and first address.
    static func requester(_ account: Account) -> Share.AccessRequester {
        accessRequester(
            AccessRequestRow(
                id: 0,
                requestID: "",
                lookup: account.primaryLookup,
                requestedAt: EngineClock.seconds,
                share: 0,
                account: AccountIdentityRow(account)
            )
        )
    }

    /// A stored request as the owner and administrators see it (R40).
    static func accessRequester(_ row: AccessRequestRow) -> Share.AccessRequester {
        Share.AccessRequester(
            requestID: row.requestID,
            userIdentity: UserIdentity(
                userRecordID: row.account.userRecordID,
                lookupInfo: row.lookup,
                nameComponents: row.account.name,
                hasiCloudAccount: true
            ),
            participantLookupInfo: row.lookup,
            requestedAt: Date(timeIntervalSince1970: row.requestedAt)
        )
    }

    /// A stored block as the owner and administrators see it (R40): the account's identity as
    /// a participant's shows (R2), else the address blocked.
    static func blockedIdentity(_ row: BlockRow) -> Share.BlockedIdentity {
        Share.BlockedIdentity(
            blockID: row.blockID,
            userIdentity: row.account?.identity(lookupInfo: row.lookup)
                ?? UserIdentity(userRecordID: nil, lookupInfo: row.lookup, nameComponents: nil, hasiCloudAccount: false),
            lookupInfo: row.lookup,
            blockedAt: Date(timeIntervalSince1970: row.blockedAt)
        )
    }

    // MARK: In a share's save (R41)

    /// A draft's denials, blocks and unblocks (R41) put on the share they name, each ID matched
    /// against the share as its caller reads it: one that names nothing there is
    /// `invalidArguments` naming it (a stale list is the copy's to refresh).
    func applyAccessChanges(of draft: ShareDraft, to share: Share, item: String) throws {
        func unknown(_ key: String, _ id: String, _ what: String) -> ShareFlowError {
            ShareFlowError.invalid("\(item): \(key) names \(Naming.printable(id)), which is \(what) of this share (R41)")
        }
        for (key, ids) in [
            ("denyRequesters", draft.denyRequesters), ("blockRequesters", draft.blockRequesters), ("unblockIdentities", draft.unblockIdentities),
        ] {
            var seen = Set<String>()
            for id in ids where !seen.insert(id).inserted {
                throw ShareFlowError.invalid("\(item): \(key) names \(Naming.printable(id)) twice (R41)")
            }
        }
        for id in draft.denyRequesters {
            guard let r = share.requesters.first(where: { $0.requestID == id }) else { throw unknown("denyRequesters", id, "no open request") }
            share.denyRequesters([r])
        }
        for id in draft.blockRequesters {
            if let r = share.requesters.first(where: { $0.requestID == id }) {
                share.blockRequesters([r])
            } else if let p = share.participants.first(where: { $0.participantID == id }) {
                share.blockParticipants([p])
            } else {
                throw unknown("blockRequesters", id, "neither an open request nor a participant")
            }
        }
        for id in draft.unblockIdentities {
            guard let b = share.blockedIdentities.first(where: { $0.blockID == id || $0.userIdentity.userRecordID == id }) else {
                throw unknown("unblockIdentities", id, "no blocked identity")
            }
            share.unblockIdentities([b])
        }
    }

    /// What a save's denials, blocks and unblocks touch, as stored: compared before and after
    /// the save's changes when the copy is stale (R35).
    func accessState(share: Int64, db: StoreTransaction) throws -> [String] {
        try db.accessRequests(share: share).map { "r:\($0.requestID)" } + db.blockedIdentities(share: share).map { "b:\($0.blockID)" }
    }

    /// R41: the requests `share` denies and the identities it unblocks, before its participant
    /// changes (an identity unblocked in the save may be added by it). Owner or administrator.
    func applyDenialsAndUnblocks(
        _ share: Share,
        row: ShareRow,
        me: ParticipantRow,
        isPublic: Bool,
        caller: Account,
        container: String,
        item: String,
        db: StoreTransaction
    ) throws {
        guard !share.deniedRequestIDs.isEmpty || !share.unblockedIDs.isEmpty else { return }
        try SharingRules.require(.changeAccessRequests, of: me, isPublicShare: isPublic, item: item)
        if !share.unblockedIDs.isEmpty {
            let blocks = try db.blockedIdentities(share: row.id)
            let gone = blocks.filter { share.unblockedIDs.contains($0.blockID) }
            try db.unblock(gone.map(\.id), share: row.id)
            if !gone.isEmpty {
                var event = Event(.shareIdentitiesUnblocked, caller: caller, container: container)
                event.share = share
                event.access = AccessEventDetails(identities: gone.map(Engine.blockedIdentity))
                emit(event)
            }
        }
        if !share.deniedRequestIDs.isEmpty {
            let requests = try db.accessRequests(share: row.id)
            let denied = requests.filter { share.deniedRequestIDs.contains($0.requestID) }
            try db.closeAccessRequests(denied.map(\.id), share: row.id)
            if !denied.isEmpty {
                var event = Event(.shareRequestersDenied, caller: caller, container: container)
                event.share = share
                event.access = AccessEventDetails(requesters: denied.map(Engine.accessRequester))
                emit(event)
            }
        }
    }

    /// R41: the requesters and participants `share` blocks, after its participant changes:
    /// each identity joins the blocked list (by account, else address), its request closes and
    /// its participant leaves the share (reason `blocked`). Owner or administrator; only the
    /// owner blocks an administrator (R26).
    func applyBlocks(
        _ share: Share,
        row: ShareRow,
        me: ParticipantRow,
        isPublic: Bool,
        caller: Account,
        container: String,
        item: String,
        db: StoreTransaction
    ) throws {
        guard !share.blockedIDs.isEmpty else { return }
        try SharingRules.require(.changeAccessRequests, of: me, isPublicShare: isPublic, item: item)
        let requests = try db.accessRequests(share: row.id)
        let participants = try participantRows(share: row.id, db: db)
        var identities: [Share.BlockedIdentity] = []
        var removed: [Participant] = []
        let now = EngineClock.seconds
        /// A blocked participant leaves the share, reason `blocked`, and the event lists them.
        func takeOff(_ p: ParticipantRow) throws {
            guard p.status != .removed else { return }
            try setStatus(.removed, of: p, share: share, reason: .blocked, caller: caller, container: container, db: db)
            var gone = p
            gone.status = .removed
            removed.append(try participantObject(gone, db: db))
        }
        for id in share.blockedIDs {
            if let request = requests.first(where: { $0.requestID == id }) {
                try db.block(share: row.id, account: request.account.id, lookup: request.lookup, at: now)
                _ = try db.closeAccessRequest(share: row.id, account: request.account.id)
                identities.append(
                    Engine.blockedIdentity(
                        BlockRow(id: 0, blockID: "", lookup: request.lookup, blockedAt: now, accountID: request.account.id, account: request.account)
                    )
                )
            } else if let p = participants.first(where: { $0.participantID == id }), p.oneTimeToken != nil, p.accountID == nil {
                // An unclaimed one-time link is nobody to block (R44): it is only taken off.
                try takeOff(p)
            } else if let p = participants.first(where: { $0.participantID == id }) {
                guard p.role != .owner else { throw ShareFlowError.invalid("\(item): the owner cannot be blocked from their own share") }
                if p.role == .administrator && me.role != .owner {
                    throw ShareFlowError.denied("\(item): only the owner blocks an administrator (R26)")
                }
                try db.block(share: row.id, account: p.accountID, lookup: p.lookup, at: now)
                if let account = p.accountID { _ = try db.closeAccessRequest(share: row.id, account: account) }
                let identity = try participantObject(p, db: db).userIdentity
                identities.append(
                    Share.BlockedIdentity(blockID: "", userIdentity: identity, lookupInfo: p.lookup, blockedAt: Date(timeIntervalSince1970: now))
                )
                try takeOff(p)
            } else {
                throw ShareFlowError.invalid(
                    "\(item): blockRequesters names \(Naming.printable(id)), which is neither an open request nor a participant of this share (R41)"
                )
            }
        }
        // The stored blocks, with their IDs, for the event.
        let stored = try db.blockedIdentities(share: row.id)
        let named = identities.map { identity in
            stored.first { $0.lookup == identity.lookupInfo }.map(Engine.blockedIdentity) ?? identity
        }
        var event = Event(.shareRequestersBlocked, caller: caller, container: container)
        event.share = share
        event.access = AccessEventDetails(identities: named, removedParticipants: removed)
        emit(event)
    }
}

/// The access-request events' own fields (SPEC §17): kept apart so an `Event` stays small for
/// the many events that carry none.
public final class AccessEventDetails {
    /// `share.accessRequested`, `share.accessRequestDropped`: the requester;
    /// `share.requestersDenied`: those denied.
    public let requesters: [Share.AccessRequester]
    /// `share.requestersBlocked`, `share.identitiesUnblocked`: the identities.
    public let identities: [Share.BlockedIdentity]
    /// `share.requestersBlocked`: participants the blocks took off the share.
    public let removedParticipants: [Participant]

    init(requesters: [Share.AccessRequester] = [], identities: [Share.BlockedIdentity] = [], removedParticipants: [Participant] = []) {
        self.requesters = requesters
        self.identities = identities
        self.removedParticipants = removedParticipants
    }
}
