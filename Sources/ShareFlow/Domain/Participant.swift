import Foundation

/// What a participant is on a share.
public enum ParticipantRole: String, Sendable, CaseIterable {
    case owner, administrator, privateUser, publicUser, unknown
}

/// What a participant may do with the shared records.
public enum ParticipantPermission: String, Sendable, CaseIterable {
    case none, readOnly, readWrite, unknown
}

/// Where a participant stands with the share.
public enum ParticipantAcceptanceStatus: String, Sendable, CaseIterable {
    case pending, accepted, removed, unknown
}

/// A user's participation in a share. Participants are not made by users: they come from
/// `FetchShareParticipantsOperation`, or from accepting a public share (R7).
///
/// ```swift
/// let found = try await container.fetchShareParticipants([LookupInfo(emailAddress: "bob@example.com")])
/// let bob = try found[0].1.get()
/// bob.permission = .readWrite
/// share.addParticipant(bob)                     // made by the share's next save (R9)
/// ```
public final class Participant: CustomStringConvertible {
    /// Names the participant on its share: adds and removes are tracked by it.
    public let participantID: String
    /// Who the participant is, as the caller may see them (R2).
    public let userIdentity: UserIdentity
    /// The owner makes a private participant an `administrator` or back, then saves the share
    /// (R26); any other change is refused by that save.
    public var role: ParticipantRole
    /// Settable by the share's owner or an administrator, then saved with the share (R9).
    public var permission: ParticipantPermission
    /// Set by the server (R7, R14, R18): `unknown` when fetched, `pending` once added and saved, then `accepted` or `removed`.
    public internal(set) var acceptanceStatus: ParticipantAcceptanceStatus
    /// Whether the participant joined by having an access request approved (R41; Apple's
    /// `isApprovedRequester`).
    public internal(set) var isApprovedRequester = false
    /// When the participant was added to the share (or added again); nil until saved.
    public internal(set) var dateAddedToShare: Date?
    /// Whether this is a one-time link's participant (R44): made without an identity, it is
    /// whoever first accepts the link.
    public internal(set) var isOneTimeURLParticipant = false
    /// A one-time link's URL (R44), once the share is saved, in its owner's and
    /// administrators' copies: `Share.oneTimeURL(for:)`.
    var oneTimeURL: String?

    /// The one participant made without an identity (R44, an exception to R7; Apple's
    /// `CKShare.Participant.oneTimeURLParticipant()`): add it to a share and save, then hand
    /// out `share.oneTimeURL(for:)`; the first account to accept that URL becomes it.
    ///
    /// ```swift
    /// let guest = Participant.oneTimeURLParticipant()
    /// guest.permission = .readWrite
    /// share.addParticipant(guest)
    /// _ = try db.modifyRecords(saving: [share])
    /// let link = share.oneTimeURL(for: guest.participantID)
    /// ```
    public static func oneTimeURLParticipant(permission: ParticipantPermission = .readOnly) -> Participant {
        let p = Participant(
            participantID: RandomIdentifier.uuidString(),
            userIdentity: UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil, hasiCloudAccount: false),
            role: .privateUser,
            permission: permission,
            acceptanceStatus: .unknown
        )
        p.isOneTimeURLParticipant = true
        return p
    }

    init(
        participantID: String,
        userIdentity: UserIdentity,
        role: ParticipantRole,
        permission: ParticipantPermission,
        acceptanceStatus: ParticipantAcceptanceStatus
    ) {
        self.participantID = participantID
        self.userIdentity = userIdentity
        self.role = role
        self.permission = permission
        self.acceptanceStatus = acceptanceStatus
    }

    /// Identity, role, permission and status, for logs.
    public var description: String {
        "Participant(\(userIdentity), \(role.rawValue), \(permission.rawValue), \(acceptanceStatus.rawValue))"
    }

    /// Whether two participants name the same person (R9: adding them again updates instead).
    func isSamePerson(as other: Participant) -> Bool {
        // A one-time link's participant is nobody yet: only itself (R44).
        if isOneTimeURLParticipant || other.isOneTimeURLParticipant { return participantID == other.participantID }
        if let a = userIdentity.userRecordID, let b = other.userIdentity.userRecordID { return a == b }
        return userIdentity.lookupInfo != nil && userIdentity.lookupInfo == other.userIdentity.lookupInfo
    }
}
