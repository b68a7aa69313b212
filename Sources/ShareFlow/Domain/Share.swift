import Foundation

/// A share: a record of type `cloudkit.share` that gives other users access to a record
/// hierarchy (a root record and its descendants by `parent`) or to a whole zone (R4).
///
/// ```swift
/// let share = Share(rootRecord: trip)       // or Share(zoneID: zone)
/// share.title = "Lisbon trip"
/// share.addParticipant(bob)
/// try db.modifyRecords(saving: [trip, share])
/// print(share.url!)
/// ```
public final class Share: Record {
    public static let recordType = "cloudkit.share"
    public static let zoneShareName = "cloudkit.zoneshare"

    /// Set when saved (R6): unguessable and stable.
    public internal(set) var url: String?
    public var publicPermission: ParticipantPermission = .none
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
    /// Participants the owner removed since the last save.
    package var removedParticipantIDs: [String] = []
    /// Participants the owner added since the last save: only these may bring back someone
    /// the server has removed.
    package var addedParticipantIDs: Set<String> = []

    public var title: String? {
        get {
            if case .string(let s) = fields["cloudkit.title"] { return s }
            return nil
        }
        set { fields["cloudkit.title"] = newValue.map { .string($0) } }
    }

    public var owner: Participant? { participants.first { $0.role == .owner } }

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
        return copy
    }

    public override var description: String {
        let ownerText = owner.map { $0.userIdentity.description } ?? "?"
        let active = participants.filter { $0.acceptanceStatus != .removed }.count
        return "Share(\"\(title ?? recordID.recordName)\", url: \(url ?? "unsaved"), owner: \(ownerText), participants: \(active))"
    }
}

/// What a user learns from a share's URL before accepting it.
public final class ShareMetadata: CustomStringConvertible {
    /// The container and environment the share lives in (R32).
    public let containerID: ContainerID
    public var containerIdentifier: String { containerID.identifier }
    public var environment: CloudEnvironment { containerID.environment }
    public let share: Share
    public let url: String
    public let ownerIdentity: UserIdentity
    /// Nil for a zone share.
    public let hierarchicalRootRecordID: RecordID?
    /// Only with `shouldFetchRootRecord`, never for a zone share.
    public let rootRecord: Record?
    public let participantRole: ParticipantRole
    public let participantStatus: ParticipantAcceptanceStatus
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

    public var description: String {
        "ShareMetadata(\(share.title ?? share.recordID.recordName), container: \(containerIdentifier), owner: \(ownerIdentity), you: \(participantRole.rawValue)/\(participantPermission.rawValue)/\(participantStatus.rawValue))"
    }
}
