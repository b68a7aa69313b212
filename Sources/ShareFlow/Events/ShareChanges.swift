import Foundation

/// What a share save asks to change (SPEC §18 P2): the difference between the share as stored
/// (`PolicyRequest.share`) and as it would be after (`PolicyRequest.proposed`). A policy reads
/// it instead of comparing lists itself: "at most two writers" counts the writers added.
///
/// ```swift
/// engine.policies.add(.shareSave, name: "two-writers") { request in
///     let writers = try request.proposed?.participants.filter { $0.permission == .readWrite && $0.role != .owner } ?? []
///     return writers.count <= 2 ? .allow : .deny("at most two writers")
/// }
/// ```
public struct ShareChanges {
    /// A participant whose permission the save changes.
    public struct PermissionChange {
        /// The participant, as the save would leave them.
        public let participant: Participant
        /// Their permission as stored.
        public let from: ParticipantPermission
        /// Their permission after the save.
        public let to: ParticipantPermission
    }

    /// A value the save changes: what it is stored as (nil for a new share) and what it becomes.
    public struct Change<Value> {
        /// As stored; nil for a share being created.
        public let from: Value?
        /// After the save.
        public let to: Value?
    }

    /// People the save puts on the share (new, or removed before and added again).
    public var participantsAdded: [Participant] = []
    /// People the save takes off the share.
    public var participantsRemoved: [Participant] = []
    /// People whose permission the save changes.
    public var permissionsChanged: [PermissionChange] = []
    /// Set when the save changes the share's public permission.
    public var publicPermission: Change<ParticipantPermission>?
    /// Set when the save changes whether the share takes access requests (R38).
    public var allowsAccessRequests: Change<Bool>?
    /// Set when the save changes the share's title.
    public var title: Change<String>?

    /// Whether the save changes nothing a policy is told of.
    public var isEmpty: Bool {
        participantsAdded.isEmpty && participantsRemoved.isEmpty && permissionsChanged.isEmpty && publicPermission == nil
            && allowsAccessRequests == nil && title == nil
    }

    /// The changes from `before` (nil: a share being created) to `after`, matching people by
    /// participant ID, then as `Share.addParticipant` does (R9). Removed participants are not
    /// on either side.
    public static func between(_ before: Share?, _ after: Share) -> ShareChanges {
        var changes = ShareChanges()
        let old = before?.participants.filter { $0.acceptanceStatus != .removed } ?? []
        let new = after.participants.filter { $0.acceptanceStatus != .removed }
        // Found by ID, user record ID or lookup info through dictionaries: a share of thousands
        // costs thousands of steps, not millions (a request's lists are its caller's to size).
        let people = People(old)
        var matched = Set<ObjectIdentifier>()
        for p in new {
            guard let was = people.match(p), !matched.contains(ObjectIdentifier(was)) else {
                if p.role != .owner { changes.participantsAdded.append(p) }
                continue
            }
            matched.insert(ObjectIdentifier(was))
            if was.permission != p.permission {
                changes.permissionsChanged.append(PermissionChange(participant: p, from: was.permission, to: p.permission))
            }
        }
        changes.participantsRemoved = old.filter { !matched.contains(ObjectIdentifier($0)) && $0.role != .owner }
        let fromPublic = before?.publicPermission ?? ParticipantPermission.none
        if fromPublic != after.publicPermission { changes.publicPermission = Change(from: before?.publicPermission, to: after.publicPermission) }
        if (before?.allowsAccessRequests ?? false) != after.allowsAccessRequests {
            changes.allowsAccessRequests = Change(from: before?.allowsAccessRequests, to: after.allowsAccessRequests)
        }
        if before?.title != after.title { changes.title = Change(from: before?.title, to: after.title) }
        return changes
    }
}

/// Participants found as `Share.addParticipant` finds them (R9) — by participant ID, then as
/// the same person — in constant time each.
struct People {
    private var byID: [String: Participant] = [:]
    private var byUser: [String: Participant] = [:]
    private var byLookup: [LookupInfo: Participant] = [:]

    init(_ list: [Participant]) {
        for p in list {
            if byID[p.participantID] == nil { byID[p.participantID] = p }
            guard !p.isOneTimeURLParticipant else { continue }
            if let user = p.userIdentity.userRecordID, byUser[user] == nil { byUser[user] = p }
            if let lookup = p.userIdentity.lookupInfo, byLookup[lookup] == nil { byLookup[lookup] = p }
        }
    }

    /// The participant that is `p`: its ID, else the same person (`Participant.isSamePerson`).
    func match(_ p: Participant) -> Participant? {
        if let found = byID[p.participantID] { return found }
        if let user = p.userIdentity.userRecordID, let found = byUser[user], found.isSamePerson(as: p) { return found }
        if let lookup = p.userIdentity.lookupInfo, let found = byLookup[lookup], found.isSamePerson(as: p) { return found }
        return nil
    }
}

extension Share {
    /// The share as a save would leave it (SPEC §18 P2), for policies: a copy the policy may
    /// read and even change without touching the caller's object. `stored` is the share as
    /// stored (nil for a new one, whose owner is `owner`); `asShown`: the copy lists every
    /// participant (people the stored share has and the copy lacks leave), as under `allKeys`;
    /// under `changedKeys` only the removes the copy made take anyone off.
    func proposed(over stored: Share?, owner: @autoclosure () -> Participant?, asShown: Bool) -> Share {
        let copy = Share(recordID: recordID, rootRecordID: rootRecordID)
        copy.fields = fields
        copy.url = stored?.url ?? url
        copy.shortGUID = stored?.shortGUID ?? shortGUID
        copy.publicPermission = publicPermission
        copy.allowsAccessRequests = allowsAccessRequests
        copy.recordChangeTag = stored?.recordChangeTag
        copy.requesters = stored?.requesters ?? []
        copy.blockedIdentities = stored?.blockedIdentities ?? []
        let removed = Set(removedParticipantIDs)
        var people: [Participant] = []
        let storedPeople = stored?.participants.filter { $0.acceptanceStatus != .removed } ?? []
        let mine = People(participants)
        let theirs = People(storedPeople)
        if stored == nil, let owner = owner() { people.append(owner) }
        for p in storedPeople {
            let proposed = mine.match(p)
            if p.role == .owner {
                people.append(p.snapshot())
            } else if let proposed, !removed.contains(proposed.participantID) {
                people.append(proposed.snapshot(status: p.acceptanceStatus))
            } else if proposed == nil, !asShown, !removed.contains(p.participantID) {
                people.append(p.snapshot())
            }
        }
        for p in participants where p.role != .owner && !removed.contains(p.participantID) && theirs.match(p) == nil {
            people.append(p.snapshot(status: .pending))
        }
        copy.participants = people
        return copy
    }
}

extension Participant {
    /// A copy for a policy to read: its status as the save would leave it.
    func snapshot(status: ParticipantAcceptanceStatus? = nil) -> Participant {
        let copy = Participant(
            participantID: participantID,
            userIdentity: userIdentity,
            role: role,
            permission: permission,
            acceptanceStatus: status ?? acceptanceStatus
        )
        copy.isApprovedRequester = isApprovedRequester
        copy.dateAddedToShare = dateAddedToShare
        copy.isOneTimeURLParticipant = isOneTimeURLParticipant
        return copy
    }
}

extension Engine {
    /// The share as stored before a save of it changes anything (SPEC §18 P2), made once for
    /// every question the save asks (nil for a share being created). Read now when a point
    /// asked after the save's first writes has policies, so each sees the share before the save.
    func shareBeforeSave(_ stored: ShareRow?, zone: ZoneRow, caller: Account) -> PolicyRequest.Objects {
        let before = PolicyRequest.Objects(
            share: { [link] in
                guard let engine = link.engine, let stored else { return nil }
                return try engine.reading { db in try engine.makeShare(stored, zone: zone, caller: caller, db: db) }
            },
            participant: { nil },
            metadata: nil
        )
        if stored != nil, policies.hasPolicies(.participantAdd) || policies.hasPolicies(.sharePublicPermission) {
            _ = try? before.share
        }
        return before
    }

    /// A policy's question about a save of `share` (SPEC §18 P2): the share as stored before
    /// the save (`before`, nil while it is being created) and as the save would leave it, made
    /// only if read. Through the link, as an accept's: a policy may keep the request, and the
    /// request must not keep the engine, nor a transaction that has ended.
    static func policyRequest(
        _ point: DecisionPoint,
        share: Share,
        before: PolicyRequest.Objects,
        zone: ZoneRow,
        asShown: Bool,
        participant: Participant?,
        caller: Account,
        container: String,
        from: String? = nil,
        to: String? = nil
    ) -> PolicyRequest {
        let objects = PolicyRequest.Objects(
            share: { try before.share },
            participant: { participant?.snapshot(status: .pending) },
            metadata: nil,
            proposed: {
                // The owner is made only for a share being created (an autoclosure).
                share.proposed(
                    over: try before.share,
                    owner: Participant(
                        participantID: RandomIdentifier.uuidString(),
                        userIdentity: AccountIdentityRow(caller).identity(lookupInfo: caller.primaryLookup),
                        role: .owner,
                        permission: .readWrite,
                        acceptanceStatus: .accepted
                    ),
                    asShown: asShown
                )
            }
        )
        objects.environment = zone.container.environment.rawValue
        return PolicyRequest(point: point, caller: caller, container: container, objects: objects, from: from, to: to)
    }
}
