import Foundation

/// Participants, metadata, acceptance and discovery: R7, R10, R12, R16, R18, R19, R20, O5.
extension Engine {
    /// R7: a participant for the user behind `lookup`: `privateUser`, `readOnly`, status
    /// `unknown`; an email or phone without an account gives one with `hasiCloudAccount` false.
    public func fetchShareParticipant(_ lookup: LookupInfo, caller: Account, container: String) throws -> Participant {
        try enter(.containerCall) {
            let participant = try reading { db -> Participant in try self.participant(for: lookup, db: db) }
            emitParticipantFetched(participant, for: lookup, caller: caller, container: container)
            return participant
        }
    }

    /// R7's participant for `lookup`, read in `db` (a read, or a share save's own write).
    func participant(for lookup: LookupInfo, db: StoreTransaction) throws -> Participant {
        let identity: UserIdentity
        if let found = try db.identity(for: lookup) {
            identity = found
        } else if case .userRecordID(let u) = lookup {
            throw ShareFlowError.unknown("no account has userRecordID '\(u)'")
        } else {
            identity = UserIdentity(userRecordID: nil, lookupInfo: lookup, nameComponents: nil, hasiCloudAccount: false)
        }
        return Participant(
            participantID: RandomIdentifier.uuidString(),
            userIdentity: identity,
            role: .privateUser,
            permission: .readOnly,
            acceptanceStatus: .unknown
        )
    }

    /// `participant.fetched` (SPEC §6): once per lookup a caller asked for, by itself or as an
    /// invitee of a share it saves (then delivered when the save commits).
    func emitParticipantFetched(_ participant: Participant, for lookup: LookupInfo, caller: Account, container: String) {
        guard events.hasObservers(.participantFetched) else { return }
        var event = Event(.participantFetched, caller: caller, container: container)
        event.lookupInfo = lookup
        // As fetched: a share save goes on to set the object's permission and place it.
        event.participant = Participant(
            participantID: participant.participantID,
            userIdentity: participant.userIdentity,
            role: participant.role,
            permission: participant.permission,
            acceptanceStatus: participant.acceptanceStatus
        )
        emit(event)
    }

    /// The metadata of the share at `url`, for `caller` (R16).
    public func fetchShareMetadata(
        url: String,
        caller: Account,
        container: ContainerID,
        shouldFetchRootRecord: Bool = false,
        rootRecordDesiredKeys: [String]? = nil
    ) throws -> ShareMetadata {
        try enter(.containerCall) {
            let metadata = try reading { db -> ShareMetadata in
                let hidden = ShareFlowError.unknown("no share at \(url) for \(caller.email ?? caller.userRecordID) (R16)")
                // R27: one probe, the same statement and index seeks for a live URL as for a made-up
                // one, so a stranger learns nothing from the time it takes either.
                let link = try shareLink(url: url, db: db)
                let token = link?.shareToken ?? ""
                let probe = try db.probeShare(token: token, environment: container.environment, caller: caller.id)
                // R44: a one-time link is anyone's until claimed, then its claimer's alone.
                var unclaimed: OneTimeLinkRow?
                if let oneTime = link?.oneTime {
                    if let claimer = oneTime.claimedBy {
                        guard claimer == caller.id else { throw hidden }
                    } else if oneTime.status == .pending, !probe.isParticipant {
                        unclaimed = oneTime
                    } else if !probe.isParticipant {
                        throw hidden
                    }
                }
                guard probe.exists, probe.isParticipant || probe.isPublic || unclaimed != nil else {
                    if probe.hasUnmatchedInvitations {
                        var error = ShareFlowError(
                            .participantMayNeedVerification,
                            "\(caller.email ?? caller.userRecordID) is not a participant of the share at \(url); it was sent to an address not yet verified for any account — add that address to this account to verify (R16, R17)"
                        )
                        error.potentialMatches = try db.unmatchedInvitations(token: token)
                        throw error
                    }
                    throw hidden
                }
                guard let (row, zone, record) = try shareZoneAndRecord(url: url, environment: container.environment, db: db) else { throw hidden }
                // Every participant with its account in one statement: the caller's place and the
                // share object both come from it.
                let participants = try db.participantsWithAccounts(share: row.id)
                let mine = participants.first { $0.row.accountID == caller.id }?.row
                let role: ParticipantRole
                let status: ParticipantAcceptanceStatus
                let permission: ParticipantPermission
                if let mine {
                    (role, status, permission) = (mine.role, mine.status, mine.permission)
                } else if let unclaimed {
                    (role, status, permission) = (.privateUser, .pending, unclaimed.permission)
                } else {
                    (role, status, permission) = (.publicUser, .unknown, row.publicPermission)
                }
                let share = try makeShare(row, zone: zone, caller: caller, participants: participants, record: record, db: db)
                if unclaimed != nil, let token = Engine.shareToken(url: url) {
                    // R44: read through a link that is not yet theirs, the share is known by the
                    // link alone — never by its own URL, which would outlive the link.
                    share.url = shareURL(token: token)
                    share.shortGUID = token
                }
                // The owner is on the share's participants read above (their own row): no read again.
                let ownerAccount =
                    try participants.first { $0.row.accountID == zone.ownerID && $0.row.role == .owner }?.account
                    ?? ownerIdentity(of: zone, db: db)
                var root: Record?
                if shouldFetchRootRecord, let rootName = row.rootName, let rootRow = try recordRow(zone: zone, name: rootName, db: db) {
                    root = try makeRecord(rootRow, zone: zone, caller: caller, db: db).copy(keys: rootRecordDesiredKeys)
                }
                return ShareMetadata(
                    containerID: zone.container,
                    share: share,
                    url: url,
                    ownerIdentity: ownerAccount.identity(lookupInfo: nil),
                    hierarchicalRootRecordID: share.rootRecordID,
                    rootRecord: root,
                    participantRole: role,
                    participantStatus: status,
                    participantPermission: permission
                )
            }
            var event = Event(.shareMetadataFetched, caller: caller, container: container.identifier)
            event.url = url
            event.metadata = metadata
            emit(event)
            return metadata
        }
    }

    /// Accepting the share at `url` as read before the write: the share as it is when the
    /// accept would change nothing (the caller owns it or accepted it already: R10, R18), else
    /// what the write writes (SPEC §16 M5): the share's zone where writers run at once (a share
    /// never moves to another zone; one deleted since is not found in the write).
    ///
    /// An accept that changes nothing is thus a read: it takes no write lock, so it never waits
    /// for another writer, and a client opening a link it accepted before (CloudKit JS accepts
    /// on every open) costs the store what a lookup does. Nothing is asked of policies and no
    /// event is sent for it, as when the write found the same.
    private func acceptAsRead(_ url: String, caller: Account, environment: CloudEnvironment) throws -> (unchanged: Share?, scope: StoreWriteScope) {
        try reading { db in
            guard let (row, zone, record) = try shareZoneAndRecord(url: url, environment: environment, db: db) else { return (nil, .wholeStore) }
            let scope: StoreWriteScope = store.writersRunAtOnce ? .zones([zone.lockKey]) : .wholeStore
            let participants = try db.participantsWithAccounts(share: row.id)
            let mine = participants.first(where: { $0.row.accountID == caller.id })?.row
            guard SharingRules.acceptChangesNothing(role: mine?.role, status: mine?.status) else { return (nil, scope) }
            return (try makeShare(row, zone: zone, caller: caller, participants: participants, record: record, db: db), scope)
        }
    }

    /// Accepts the share of `metadata` for `caller`, atomically (R10, R12, R18, O5, O6).
    public func acceptShare(_ metadata: ShareMetadata, caller: Account, container containerID: ContainerID) throws -> Share {
        try enter(.containerCall) {
            guard metadata.containerID == containerID else {
                throw ShareFlowError.invalid(
                    "the share at \(metadata.url) is in container \(metadata.containerID), but this operation runs in \(containerID); accept it in its own container (O5, R32)"
                )
            }
            let container = containerID.identifier
            let before = try acceptAsRead(metadata.url, caller: caller, environment: containerID.environment)
            if let unchanged = before.unchanged { return unchanged }
            return try transaction(scope: before.scope) { db in
                let item = "share at \(metadata.url)"
                // R44: a one-time link, as stored now: the caller claims it, or it is theirs, or
                // they are a stranger to it.
                let oneTime = try shareLink(url: metadata.url, db: db)?.oneTime
                if let oneTime, let claimer = oneTime.claimedBy, claimer != caller.id {
                    throw ShareFlowError.unknown("no share at \(metadata.url) for \(caller.email ?? caller.userRecordID) (R16)")
                }
                /// The share, its zone and its participants with their accounts, as stored now, in two
                /// statements (the caller's place and the share object both come from the second).
                /// Nil when no share has the URL.
                func current() throws -> (row: ShareRow, zone: ZoneRow, participants: [ParticipantWithAccount])? {
                    guard let (row, zone) = try shareAndZone(url: metadata.url, environment: containerID.environment, db: db) else { return nil }
                    return (row, zone, try db.participantsWithAccounts(share: row.id))
                }
                func mine(_ participants: [ParticipantWithAccount]) -> ParticipantRow? {
                    participants.first { $0.row.accountID == caller.id }?.row
                }
                /// R10, R18: whether the caller may accept; false when they are on the share already
                /// (accepting again changes nothing).
                func mayAccept(_ row: ShareRow, _ mine: ParticipantRow?) throws -> Bool {
                    if SharingRules.acceptChangesNothing(role: mine?.role, status: mine?.status) { return false }
                    // R44: someone on no row of the share claims an unclaimed link — unless
                    // blocked (R42: a blocked identity joins no share, through a link neither).
                    if mine == nil, let oneTime, oneTime.claimedBy == nil, oneTime.status == .pending {
                        if try db.isBlocked(share: row.id, account: caller.id, lookup: nil) {
                            throw ShareFlowError.denied("\(item): \(caller.email ?? caller.userRecordID) is blocked from this share (R42)")
                        }
                        return true
                    }
                    try SharingRules.require(
                        .accept,
                        role: mine?.role ?? .publicUser,
                        permission: mine?.permission ?? row.publicPermission,
                        status: mine?.status ?? .unknown,
                        isPublicShare: row.publicPermission != .none,
                        item: item
                    )
                    // R42: a blocked identity joins no share, a public one included.
                    if try db.isBlocked(share: row.id, account: caller.id, lookup: nil) {
                        throw ShareFlowError.denied("\(item): \(caller.email ?? caller.userRecordID) is blocked from this share (R42)")
                    }
                    return true
                }
                guard var (row, zone, participants) = try current() else { throw ShareFlowError.unknown("\(item) no longer exists") }
                guard try mayAccept(row, mine(participants)) else {
                    return try makeShare(row, zone: zone, caller: caller, participants: participants, db: db)
                }
                // Made only if a policy reads them (most don't: that saves a share load per
                // accept). Read during the decision they show the share before this accept; a
                // request kept and read later may show what happened since.
                let objects = PolicyRequest.Objects(
                    // Through the link: a policy may keep the request, and the request must not keep
                    // the engine (nor read it once gone).
                    share: { [link, row, zone] in
                        guard let engine = link.engine else { return nil }
                        return try engine.reading { db in try engine.makeShare(row, zone: zone, caller: caller, db: db) }
                    },
                    participant: { [link, mine = mine(participants)] in
                        guard let engine = link.engine, let m = mine else { return nil }
                        return try engine.reading { db in try engine.participantObject(m, db: db) }
                    },
                    metadata: metadata
                )
                // R44: true when this accept claims the link (not for someone on the share already).
                objects.oneTimeURL = oneTime != nil && mine(participants) == nil
                let request = PolicyRequest(point: .shareAccept, caller: caller, container: container, objects: objects)
                if try askPolicies(request, item: item, db: db) {
                    // A policy called back into the engine and changed the store: the accept goes
                    // on from the store as it is now, checked again — a share deleted meanwhile is
                    // unknownItem, never a write the store refuses.
                    guard let now = try current(), now.row.id == row.id else {
                        throw ShareFlowError.unknown("\(item) was deleted while it was being accepted (by a policy)")
                    }
                    (row, zone, participants) = now
                    guard try mayAccept(row, mine(participants)) else {
                        return try makeShare(row, zone: zone, caller: caller, participants: participants, db: db)
                    }
                }
                return try accept(
                    row: row,
                    zone: zone,
                    participants: participants,
                    metadata: metadata,
                    oneTime: oneTime,
                    caller: caller,
                    container: container,
                    db: db
                )
            }
        }
    }

    /// The accept's writes, once every rule and policy allowed it (R10, R18). `participants`:
    /// the share's as read in this transaction, with their accounts.
    private func accept(
        row: ShareRow,
        zone: ZoneRow,
        participants: [ParticipantWithAccount],
        metadata: ShareMetadata,
        oneTime: OneTimeLinkRow?,
        caller: Account,
        container: String,
        db: StoreTransaction
    ) throws -> Share {
        let item = "share at \(metadata.url)"
        let isPublic = row.publicPermission != .none
        let share: Share
        var claimed = false
        if let oneTime, oneTime.claimedBy == nil, !participants.contains(where: { $0.row.accountID == caller.id }) {
            // R44: the first accept claims the link's participant, in this transaction.
            guard try db.claimOneTimeLink(participant: oneTime.participant, account: caller.id, lookup: caller.primaryLookup) else {
                throw ShareFlowError.unknown("no share at \(metadata.url) for \(caller.email ?? caller.userRecordID) (R16)")
            }
            share = try makeShare(row, zone: zone, caller: caller, db: db)
            claimed = true
        } else if let i = participants.firstIndex(where: { $0.row.accountID == caller.id }) {
            let mine = participants[i].row
            // The caller's row changes as written; the rest of the share is as just read.
            var written = mine
            if isPublic && mine.status == .removed {
                try db.acceptAsPublicUser(participant: mine.id, permission: row.publicPermission)
                written.role = .publicUser
                written.permission = row.publicPermission
            } else {
                try db.setStatus(.accepted, participant: mine.id)
            }
            written.status = .accepted
            var after = participants
            after[i] = ParticipantWithAccount(row: written, account: participants[i].account)
            share = try makeShare(row, zone: zone, caller: caller, participants: after, db: db)
        } else {
            // R10: anyone with the URL of a public share joins as a publicUser.
            let count = try db.activeParticipantCount(share: row.id)
            guard count < options.maxParticipants else {
                throw ShareFlowError(.tooManyParticipants, "\(item) already has \(count) participants, the most a share holds (R8)")
            }
            try db.insertParticipant(
                share: row.id,
                participantID: RandomIdentifier.uuidString(),
                account: caller.id,
                lookup: caller.primaryLookup,
                role: .publicUser,
                permission: row.publicPermission,
                status: .accepted,
                at: EngineClock.seconds
            )
            share = try makeShare(row, zone: zone, caller: caller, db: db)
        }
        var event = Event(.shareAccepted, caller: caller, container: container)
        event.share = share
        event.participant = share.currentUserParticipant
        event.metadata = metadata
        if claimed { event.oneTimeURL = true }
        emit(event)
        return share
    }

    /// R19: the discoverable accounts among `caller`'s contacts, one identity per account with
    /// every matching contact identifier. `progress(done, total)` is called every
    /// `options.discoveryProgressInterval` contacts.
    public func discoverAllUserIdentities(
        caller: Account,
        container: String,
        progress: ((Int, Int) -> Void)? = nil,
        isCancelled: () -> Bool = { false }
    ) throws -> [UserIdentity] {
        try enter(.containerCall) {
            let identities = try reading { db -> [UserIdentity] in
                let contacts = try db.contacts(of: caller.id)
                var order: [Int64] = []
                var found: [Int64: (account: Account, lookup: LookupInfo, ids: [String])] = [:]
                for (i, c) in contacts.enumerated() {
                    if isCancelled() { throw ShareFlowError(.operationCancelled, "discovery was cancelled after \(i) of \(contacts.count) contacts") }
                    let lookup = c.lookupInfo
                    let identifier = c.contactIdentifier
                    if let id = try accountID(for: lookup, db: db), id != caller.id {
                        if found[id] != nil {
                            if !found[id]!.ids.contains(identifier) { found[id]!.ids.append(identifier) }
                        } else {
                            let account = try loadAccount(id: id, db: db)
                            if account.isDiscoverable {
                                found[id] = (account, lookup, [identifier])
                                order.append(id)
                            }
                        }
                    }
                    if let progress, (i + 1) % options.discoveryProgressInterval == 0 { progress(i + 1, contacts.count) }
                }
                if let progress, contacts.count >= options.discoveryProgressInterval, contacts.count % options.discoveryProgressInterval != 0 {
                    progress(contacts.count, contacts.count)
                }
                return order.map { found[$0]!.account.identity(lookupInfo: found[$0]!.lookup, contactIdentifiers: found[$0]!.ids) }
            }
            for identity in identities {
                var event = Event(.userDiscovered, caller: caller, container: container)
                event.identity = identity
                emit(event)
            }
            return identities
        }
    }

    /// R20: the identity behind `lookup` if that account is discoverable, else nil — the same
    /// answer as for no account at all.
    public func discoverUserIdentity(_ lookup: LookupInfo, caller: Account, container: String) throws -> UserIdentity? {
        try enter(.containerCall) {
            let identity = try reading { db -> UserIdentity? in
                guard let id = try accountID(for: lookup, db: db) else { return nil }
                let account = try loadAccount(id: id, db: db)
                guard account.isDiscoverable else { return nil }
                let ids = caller.contacts.filter { $0.lookupInfo == lookup }.map(\.contactIdentifier)
                return account.identity(lookupInfo: lookup, contactIdentifiers: ids)
            }
            if let identity {
                var event = Event(.userDiscovered, caller: caller, container: container)
                event.identity = identity
                emit(event)
            }
            return identity
        }
    }
}
