/// One item of a modify call as CloudKit Web Services' `records/modify` names it: each kind
/// of operation decided by the engine inside the call's one write transaction, so a change
/// tag is compared with the record as that transaction reads it (R21) and nothing is looked
/// up before the write (`CloudDatabase.modify(_:atomically:)`).
///
/// ```swift
/// let results = try db.modify([
///     .update(edited, tag: copy.recordChangeTag),  // at the copy's tag, or CONFLICT
///     .update(note, tag: nil, force: true),  // whatever the server holds; made when missing (R36)
///     .share(ShareDraft(recordName: "S1", zoneID: trips, target: .new(rootName: "trip"), participants: [
///         .invited(LookupRequest(emailAddress: "dana@example.com"), permission: .readWrite)
///     ])),
/// ])
/// ```
public enum RecordChange {
    /// A new record: a name already taken is `serverRecordChanged` (R21).
    case create(Record)
    /// The server's record with `record`'s fields put over its own, the fields `removing`
    /// names taken off it (over HTTP, a field sent as `null`), and `record`'s parent when it
    /// names one, at the copy's change tag `tag` (R21; nil never matches one). `force`:
    /// whatever the server's tag, and made when it does not exist (R36).
    case update(Record, tag: String?, force: Bool = false, removing: Set<String> = [])
    /// The server's record made exactly `record` (its fields and parent), under the same
    /// change-tag rules as `update`.
    case replace(Record, tag: String?, force: Bool = false)
    /// The record deleted at change tag `tag` (R21), or, with `tag` nil, whatever its tag.
    case delete(RecordID, tag: String?)
    /// A share made or changed from its draft, its invitees looked up in the save (R2, R7).
    case share(ShareDraft)

    /// The record this change saves or deletes.
    public var recordID: RecordID {
        switch self {
        case .create(let record), .update(let record, _, _, _), .replace(let record, _, _): record.recordID
        case .delete(let id, _): id
        case .share(let draft): draft.recordID
        }
    }
}

/// What one change of a modify call did: the record as saved, or the ID deleted.
public enum RecordChangeOutcome {
    /// The record (a `Share` for a share) as the server holds it after the call.
    case saved(Record)
    /// The record deleted.
    case deleted(RecordID)
}

/// A share as a client describes it to `records/modify`: which share (a new one for a root,
/// or the server's at a change tag), and the permission, fields and participants it should
/// have. The engine makes the `Share` from it inside the save, from the store as the save
/// reads it: the copy's tag is compared there (R21, R35) and each invitee is looked up there
/// (R2, R7), after the caller is known to manage the share's participants (R26).
public struct ShareDraft {
    /// Which share a draft describes.
    public enum Target {
        /// A new share of the record `rootName` of the draft's zone: saved in the same call, or
        /// already on the server at `rootTag` when given (a changed root is `serverRecordChanged`).
        /// A root already on the server is saved again with its share, in the same transaction.
        case new(rootName: String, rootTag: String? = nil)
        /// The server's share at the copy's change tag `tag` (R21); `force`: whatever its tag,
        /// except that its participants change only from the current copy's tag (R35).
        case existing(tag: String?, force: Bool = false)
        /// A new share of the draft's whole zone (R5): its record name is `Share.zoneShareName`.
        case zone
    }

    /// The share record's name.
    public var recordName: String
    /// The zone of the share (and of its root).
    public var zoneID: RecordZoneID
    /// A new share of a root, or the server's.
    public var target: Target
    /// The permission anyone with the URL gets (R11); nil leaves it as it is.
    public var publicPermission: ParticipantPermission?
    /// Whether people without an invitation may ask to join (R38); nil leaves it as it is.
    public var allowsAccessRequests: Bool?
    /// Request IDs to deny (R41); over HTTP, the `participantId` of `requesters` entries.
    public var denyRequesters: [String] = []
    /// Request IDs, or participant IDs of people on the share, to block (R41).
    public var blockRequesters: [String] = []
    /// Block IDs (the `participantId` of `blocked` entries) or user record names to unblock (R41).
    public var unblockIdentities: [String] = []
    /// Fields put over the share's own (its title, say); nil changes none.
    public var fields: [String: FieldValue]?
    /// The participants the share should have besides its owner, in order; nil leaves them as
    /// they are. Anyone on the share but not listed is taken off.
    public var participants: [ParticipantDraft]?

    /// The share record's ID.
    public var recordID: RecordID { RecordID(recordName: recordName, zoneID: zoneID) }

    /// A draft of the share `recordName` in `zoneID`; what is left nil stays as the server has it.
    public init(
        recordName: String,
        zoneID: RecordZoneID,
        target: Target,
        publicPermission: ParticipantPermission? = nil,
        fields: [String: FieldValue]? = nil,
        participants: [ParticipantDraft]? = nil
    ) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.target = target
        self.publicPermission = publicPermission
        self.fields = fields
        self.participants = participants
    }
}

/// One participant of a `ShareDraft`.
public enum ParticipantDraft {
    /// The participant `participantID` already on the share, at `permission` (and `role`,
    /// `administrator` or `privateUser`, when given); when no one on the share has that ID,
    /// the person `lookup` names is invited instead (when given).
    case kept(participantID: String, permission: ParticipantPermission, lookup: LookupRequest? = nil, role: ParticipantRole? = nil)
    /// The person `lookup` names (an account, or an address no account has yet: R2), at
    /// `permission` (and `role`, `administrator` or `privateUser`, when given): looked up in
    /// the save, which tells `participant.fetched`'s observers once. The share's save judges
    /// the role as it judges any change of one (R26).
    case invited(LookupRequest, permission: ParticipantPermission, role: ParticipantRole? = nil)
}
