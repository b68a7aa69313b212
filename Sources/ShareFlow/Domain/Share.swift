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

    /// Takes the server's state after a save: its stamp, URL, participants and public
    /// permission; the adds and removes made on this object are done.
    override func adoptServerState(of server: Record) {
        adoptServerStamp(of: server)
        guard let server = server as? Share else { return }
        serverPublicPermission = server.publicPermission
        serverAllowsAccessRequests = server.allowsAccessRequests
        allowsAccessRequests = server.allowsAccessRequests
        url = server.url
        participants = server.participants
        currentUserParticipant = server.currentUserParticipant
        publicPermission = server.publicPermission
        removedParticipantIDs = []
        addedParticipantIDs = []
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
