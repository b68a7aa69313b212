import Foundation

/// A share: a record of type `cloudkit.share` that gives other users access to a record
/// hierarchy (a root record and its descendants by `parent`) or to a whole zone (R4).
///
/// ```swift
/// let share = Share(rootRecord: trip)       // or Share(zoneID: zone)
/// share.title = "Lisbon trip"
/// share.addParticipant(bob)                 // a Participant from fetchShareParticipants (R7)
/// if let error = try db.modifyRecords(saving: [trip, share]).error { throw error }
/// print(share.url!)                         // set by the save (R6)
/// ```
public final class Share: Record {
    /// The record type of every share.
    public static let recordType = "cloudkit.share"
    /// The record name of every zone share (R4).
    public static let zoneShareName = "cloudkit.zoneshare"

    /// Set when saved (R6): unguessable and stable.
    public internal(set) var url: String?
    /// What anyone with the URL gets on accepting; `none` keeps the share private (R10). A save that changes it
    /// removes every `pending` participant, or every participant but the owner when the new value is `none` (R11).
    public var publicPermission: ParticipantPermission = .none
    /// Whether people without an invitation may ask to join the share (R38; Apple's
    /// `CKShare.allowsAccessRequests`): while the share is private, a signed-in account that is
    /// not on it may record a request the owner and administrators then approve or deny. Only
    /// they may change it: a save that changes it from anyone else is `permissionFailure`.
    public var allowsAccessRequests = false
    /// Open access requests, oldest first: shown to the owner and administrators only, empty
    /// for everyone else (R40).
    public internal(set) var requesters: [AccessRequester] = []
    /// Identities that may neither ask to join nor join (R41, R42): shown to the owner and
    /// administrators only, empty for everyone else (R40).
    public internal(set) var blockedIdentities: [BlockedIdentity] = []
    /// As the caller may see them (R15): owner and caller at least.
    public internal(set) var participants: [Participant] = []
    /// The caller's own participant, relative to who fetched or saved the share.
    public internal(set) var currentUserParticipant: Participant?
    /// The root record's ID for a hierarchy share; nil for a zone share.
    public let rootRecordID: RecordID?
    /// The root record this share was made with, so a save can check R5.
    weak var rootRecord: Record?
    /// The public permission as the server last gave it (a `changedKeys` save sends it only
    /// when it differs).
    var serverPublicPermission: ParticipantPermission?
    /// `allowsAccessRequests` as the server last gave it (a `changedKeys` save sends it only
    /// when it differs).
    var serverAllowsAccessRequests: Bool?
    /// Participants the owner removed since the last save.
    package var removedParticipantIDs: [String] = []
    /// Participants the owner added since the last save: only these may bring back someone
    /// the server has removed.
    package var addedParticipantIDs: Set<String> = []
    /// Requests denied, requesters or participants blocked and identities unblocked since the
    /// last save (R41): by request, participant or block ID, made by the next save.
    package var deniedRequestIDs: [String] = []
    package var blockedIDs: [String] = []
    package var unblockedIDs: [String] = []

    /// The share's `cloudkit.title` field, which invitees see; the owner edits it (R6).
    public var title: String? {
        get {
            if case .string(let s) = fields["cloudkit.title"] { return s }
            return nil
        }
        set { fields["cloudkit.title"] = newValue.map { .string($0) } }
    }

    /// The participant whose role is `owner`, among those the caller sees (R15).
    public var owner: Participant? { participants.first { $0.role == .owner } }

    /// Whether the share covers a whole zone rather than a record hierarchy (R4).
    public var isZoneShare: Bool { rootRecordID == nil }

    /// A new hierarchy share rooted at `rootRecord`; save them together (R5).
    public init(rootRecord: Record, recordName: String = "Share-" + RandomIdentifier.uuidString()) {
        rootRecordID = rootRecord.recordID
        self.rootRecord = rootRecord
        super.init(
            recordType: Share.recordType,
            recordID: RecordID(recordName: recordName, zoneID: rootRecord.recordID.zoneID)
        )
        rootRecord.share = recordID
    }

    /// A new zone share (R4).
    public init(zoneID: RecordZoneID) {
        rootRecordID = nil
        super.init(recordType: Share.recordType, recordID: RecordID(recordName: Share.zoneShareName, zoneID: zoneID))
    }

    /// A share as loaded from the store.
    init(recordID: RecordID, rootRecordID: RecordID?) {
        self.rootRecordID = rootRecordID
        super.init(recordType: Share.recordType, recordID: recordID)
    }

    /// Adds a participant, or updates the one already on the share for the same person (R9).
    /// The change is made by the next save.
    public func addParticipant(_ participant: Participant) {
        removedParticipantIDs.removeAll { $0 == participant.participantID }
        if let existing = participants.first(where: { $0 === participant || $0.isSamePerson(as: participant) }) {
            if existing !== participant { existing.permission = participant.permission }
            removedParticipantIDs.removeAll { $0 == existing.participantID }
            addedParticipantIDs.insert(existing.participantID)
            return
        }
        participants.append(participant)
        addedParticipantIDs.insert(participant.participantID)
    }

    /// Removes a participant; the change is made by the next save.
    public func removeParticipant(_ participant: Participant) {
        guard let i = participants.firstIndex(where: { $0 === participant || $0.participantID == participant.participantID }) else { return }
        let p = participants.remove(at: i)
        addedParticipantIDs.remove(p.participantID)
        removedParticipantIDs.append(p.participantID)
    }

    /// The URL of the one-time link participant `participantID` stands for (R44; Apple's
    /// `CKShare.oneTimeURL(for:)`): its own, at least 128 random bits; nil before the share's
    /// save, for another participant, or in a copy of someone who is not the owner or an
    /// administrator.
    public func oneTimeURL(for participantID: String) -> String? {
        participants.first { $0.participantID == participantID }?.oneTimeURL
    }

    /// Closes these requests with the next save; their requesters may ask again (R41; Apple's
    /// `denyRequesters(_:)`).
    ///
    /// ```swift
    /// share.denyRequesters(share.requesters.filter { $0.requestedAt < lastWeek })
    /// try db.modifyRecords(saving: [share])
    /// ```
    public func denyRequesters(_ requesters: [AccessRequester]) {
        for r in requesters where !deniedRequestIDs.contains(r.requestID) { deniedRequestIDs.append(r.requestID) }
    }

    /// Blocks these requesters with the next save: their requests close and their identities
    /// join `blockedIdentities`, so they can neither ask again nor join (R41; Apple's
    /// `blockRequesters(_:)`).
    public func blockRequesters(_ requesters: [AccessRequester]) {
        for r in requesters where !blockedIDs.contains(r.requestID) { blockedIDs.append(r.requestID) }
    }

    /// Blocks these participants' identities with the next save, taking them off the share
    /// (reason `blocked`): ShareFlow's choice, beside Apple's requesters-only form (R41).
    public func blockParticipants(_ participants: [Participant]) {
        for p in participants where !blockedIDs.contains(p.participantID) { blockedIDs.append(p.participantID) }
    }

    /// ShareFlow's convenience for approving (R41): a participant for each requester's own
    /// address, as `FetchShareParticipants` with its `participantLookupInfo` would give,
    /// added with `permission` and `role`; the next save approves them (they are `pending`,
    /// with `isApprovedRequester`). No `participant.fetched` event is sent for these.
    public func approveRequesters(
        _ requesters: [AccessRequester],
        permission: ParticipantPermission = .readOnly,
        role: ParticipantRole = .privateUser
    ) {
        for r in requesters {
            addParticipant(
                Participant(
                    participantID: RandomIdentifier.uuidString(),
                    userIdentity: r.userIdentity,
                    role: role,
                    permission: permission,
                    acceptanceStatus: .unknown
                )
            )
        }
    }

    /// Takes these identities off `blockedIdentities` with the next save (R41; Apple's
    /// `unblockIdentities(_:)`).
    public func unblockIdentities(_ identities: [BlockedIdentity]) {
        for b in identities where !unblockedIDs.contains(b.blockID) { unblockedIDs.append(b.blockID) }
    }

    /// Takes the server's state after a save: its stamp, URL, participants and public
    /// permission; the adds and removes made on this object are done.
    override func adoptServerState(of server: Record) {
        adoptServerStamp(of: server)
        guard let server = server as? Share else { return }
        serverPublicPermission = server.publicPermission
        serverAllowsAccessRequests = server.allowsAccessRequests
        allowsAccessRequests = server.allowsAccessRequests
        url = server.url
        requesters = server.requesters
        blockedIdentities = server.blockedIdentities
        participants = server.participants
        currentUserParticipant = server.currentUserParticipant
        publicPermission = server.publicPermission
        removedParticipantIDs = []
        addedParticipantIDs = []
        deniedRequestIDs = []
        blockedIDs = []
        unblockedIDs = []
    }

    override func duplicate() -> Record {
        let s = Share(recordID: recordID, rootRecordID: rootRecordID)
        s.copyState(from: self)
        s.url = url
        s.publicPermission = publicPermission
        s.serverPublicPermission = serverPublicPermission
        s.allowsAccessRequests = allowsAccessRequests
        s.serverAllowsAccessRequests = serverAllowsAccessRequests
        s.participants = participants
        s.requesters = requesters
        s.blockedIdentities = blockedIdentities
        s.currentUserParticipant = currentUserParticipant
        return s
    }

    /// The share as the server last gave it to this object: its fields and public permission
    /// (participants as the object shows them).
    override func ancestor() -> Record? {
        guard let base = serverFields, let copy = duplicate() as? Share else { return nil }
        copy.fields = base
        copy.publicPermission = serverPublicPermission ?? publicPermission
        copy.allowsAccessRequests = serverAllowsAccessRequests ?? allowsAccessRequests
        return copy
    }

    public override var description: String {
        let ownerText = owner.map { $0.userIdentity.description } ?? "?"
        let active = participants.filter { $0.acceptanceStatus != .removed }.count
        return "Share(\"\(title ?? recordID.recordName)\", url: \(url ?? "unsaved"), owner: \(ownerText), participants: \(active))"
    }
}

extension Share {
    /// Someone who asked to join the share (R39, R40; Apple's `CKShare.AccessRequester`). The
    /// owner approves by adding a participant for `participantLookupInfo` (R41).
    ///
    /// ```swift
    /// for requester in share.requesters where requester.participantLookupInfo.emailAddress?.hasSuffix("@example.com") == true {
    ///     let p = try engine.fetchShareParticipant(requester.participantLookupInfo, caller: owner, container: "iCloud.t")
    ///     share.addParticipant(p)
    /// }
    /// ```
    public struct AccessRequester: Sendable, CustomStringConvertible {
        /// Names the request (over HTTP, the `participantId` of a `requesters` entry).
        public let requestID: String
        /// Who asked: name components and the address they asked with, shown by consent (R40).
        public let userIdentity: UserIdentity
        /// The address to fetch a participant with, to approve (R41).
        public let participantLookupInfo: LookupInfo
        /// When they last asked.
        public let requestedAt: Date

        /// The requester's identity and when they asked, for logs.
        public var description: String { "AccessRequester(\(userIdentity), \(requestedAt))" }
    }

    /// An identity that may neither ask to join the share nor join it (R41, R42; Apple's
    /// `CKShare.BlockedIdentity`).
    public struct BlockedIdentity: Sendable, CustomStringConvertible {
        /// Names the block (over HTTP, the `participantId` of a `blocked` entry).
        public let blockID: String
        /// Who is blocked, as the owner saw them when blocking.
        public let userIdentity: UserIdentity
        /// The address the block matches when the identity has no account.
        public let lookupInfo: LookupInfo
        /// When it was blocked.
        public let blockedAt: Date

        /// The identity and when it was blocked, for logs.
        public var description: String { "BlockedIdentity(\(userIdentity), \(blockedAt))" }
    }
}

/// What a user learns from a share's URL before accepting it.
///
/// ```swift
/// let found = try await container.fetchShareMetadata([url], shouldFetchRootRecord: true)
/// let metadata = try found[0].1.get()           // or unknownItem for a stranger to a private share (R16)
/// let accepted = try await container.accept([metadata])
/// ```
public final class ShareMetadata: CustomStringConvertible {
    /// The container and environment the share lives in (R32).
    public let containerID: ContainerID
    /// The container's identifier, as CloudKit's metadata gives it.
    public var containerIdentifier: String { containerID.identifier }
    /// The environment the share lives in (R32).
    public var environment: CloudEnvironment { containerID.environment }
    /// The share, as the caller may see it (R15).
    public let share: Share
    /// The URL the metadata was fetched with.
    public let url: String
    /// The share's owner, named only when discoverable (R2).
    public let ownerIdentity: UserIdentity
    /// Nil for a zone share.
    public let hierarchicalRootRecordID: RecordID?
    /// Only with `shouldFetchRootRecord`, never for a zone share.
    public let rootRecord: Record?
    /// The caller's role; `publicUser` for someone not yet on a public share.
    public let participantRole: ParticipantRole
    /// The caller's acceptance status; `unknown` for someone not yet on a public share.
    public let participantStatus: ParticipantAcceptanceStatus
    /// What the caller may do with the records: their own permission, or a public share's `publicPermission` for someone not yet on it.
    public let participantPermission: ParticipantPermission

    init(
        containerID: ContainerID,
        share: Share,
        url: String,
        ownerIdentity: UserIdentity,
        hierarchicalRootRecordID: RecordID?,
        rootRecord: Record?,
        participantRole: ParticipantRole,
        participantStatus: ParticipantAcceptanceStatus,
        participantPermission: ParticipantPermission
    ) {
        self.containerID = containerID
        self.share = share
        self.url = url
        self.ownerIdentity = ownerIdentity
        self.hierarchicalRootRecordID = hierarchicalRootRecordID
        self.rootRecord = rootRecord
        self.participantRole = participantRole
        self.participantStatus = participantStatus
        self.participantPermission = participantPermission
    }

    /// Title, container, owner and the caller's role, permission and status, for logs.
    public var description: String {
        "ShareMetadata(\(share.title ?? share.recordID.recordName), container: \(containerIdentifier), owner: \(ownerIdentity), you: \(participantRole.rawValue)/\(participantPermission.rawValue)/\(participantStatus.rawValue))"
    }
}
