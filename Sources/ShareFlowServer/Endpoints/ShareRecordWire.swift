import Foundation
import ShareFlow

/// A share record of `records/modify` (Apple spells its type `cloudkit.share`) as the draft
/// the engine makes the share from (`ShareDraft`): a new share for its root (`forRecord`), or
/// the server's at the copy's tag, with the permission, fields and participants listed.
enum ShareRecordWire {
    typealias Object = WireFormat.Object

    /// The draft a share record stands for: on `create`, a new share of `forRecord` (saved in
    /// this request, or already on the server: Apple's two-request flow); otherwise the
    /// server's share at the given tag. Its participants become those listed: kept by
    /// `participantId`, or named by `userIdentity.lookupInfo` (resolved as
    /// FetchShareParticipants does, in the save: R2, R7); `type: OWNER` entries are the owner,
    /// who stays.
    static func draft(_ n: Int, _ rec: Object, type: String, name: String, zone: RecordZoneID) throws -> ShareDraft {
        let field = "operations[\(n)].record"
        let target: ShareDraft.Target
        if type == "create", rec["forRecord"] == nil || rec["forRecord"] is NSNull, name == Share.zoneShareName {
            // A zone's share (R5): Apple Invites makes one per event zone.
            target = .zone
        } else if type == "create" {
            guard let forRecord = try WireFormat.object(rec["forRecord"], field: "\(field).forRecord"),
                let rootName = try WireFormat.string(forRecord["recordName"], field: "\(field).forRecord.recordName")
            else {
                throw CloudKitError.badRequest(
                    "\(field).forRecord.recordName is required to create a share (or name it \(Share.zoneShareName), without forRecord, to share its zone)"
                )
            }
            let rootTag = try WireFormat.string(forRecord["recordChangeTag"], field: "\(field).forRecord.recordChangeTag")
            target = .new(rootName: rootName, rootTag: rootTag)
        } else {
            let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
            target = .existing(tag: tag, force: type.hasPrefix("force"))
        }
        var fields: [String: FieldValue]?
        if let given = try WireFormat.object(rec["fields"], field: "\(field).fields") {
            fields = try given.reduce(into: [:]) { fields, entry in
                fields[entry.key] = try WireFormat.fieldValue(entry.value, field: entry.key, zone: zone)
            }
        }
        var participants: [ParticipantDraft]?
        if let listed = try WireFormat.items(rec["participants"], field: "\(field).participants") {
            participants = try listed.enumerated().compactMap { m, raw in try participant(raw, at: "\(field).participants[\(m)]") }
        }
        var draft = ShareDraft(
            recordName: name,
            zoneID: zone,
            target: target,
            publicPermission: try WireFormat.permission(rec["publicPermission"], field: "\(field).publicPermission"),
            fields: fields,
            participants: participants
        )
        // Apple's wire names the opposite: `denyAccessRequests` (R38).
        draft.allowsAccessRequests = try WireFormat.bool(rec["denyAccessRequests"], field: "\(field).denyAccessRequests").map { !$0 }
        // ShareFlow's request-only keys of an update (SPEC §17): IDs the share's own lists give.
        draft.denyRequesters = try WireFormat.strings(rec["denyRequesters"], field: "\(field).denyRequesters") ?? []
        draft.blockRequesters = try WireFormat.strings(rec["blockRequesters"], field: "\(field).blockRequesters") ?? []
        draft.unblockIdentities = try WireFormat.strings(rec["unblockIdentities"], field: "\(field).unblockIdentities") ?? []
        return draft
    }

    /// The roles a listed participant's `type` names.
    private static let roles: [String: ParticipantRole] = [
        "OWNER": .owner, "ADMINISTRATOR": .administrator, "USER": .privateUser, "PUBLIC_USER": .publicUser,
    ]

    /// One listed participant. Its `type` is the role it should have (absent: as it is, or
    /// `USER` for someone new); the share's save judges a change, and skips an `OWNER` entry
    /// only when it is the owner's.
    private static func participant(_ raw: Any, at field: String) throws -> ParticipantDraft? {
        guard let p = raw as? Object else { throw CloudKitError.badRequest("\(field) must be an object") }
        let type = try WireFormat.string(p["type"], field: "\(field).type")
        let role = try type.map { type in
            guard let role = roles[type] else {
                throw CloudKitError.badRequest("\(field).type must be OWNER, ADMINISTRATOR, USER or PUBLIC_USER, got \(Naming.printable(type))")
            }
            return role
        }
        let permission = try WireFormat.permission(p["permission"], field: "\(field).permission") ?? .readOnly
        let at = "\(field).userIdentity"
        let identity = try WireFormat.object(p["userIdentity"], field: at)
        let info = try WireFormat.object(identity?["lookupInfo"], field: at + ".lookupInfo") ?? [:]
        let lookup = LookupRequest(
            emailAddress: try WireFormat.string(info["emailAddress"], field: at + ".lookupInfo.emailAddress"),
            phoneNumber: try WireFormat.string(info["phoneNumber"], field: at + ".lookupInfo.phoneNumber"),
            userRecordID: try WireFormat.string(info["userRecordName"], field: at + ".lookupInfo.userRecordName")
        )
        if let id = try WireFormat.string(p["participantId"], field: "\(field).participantId") {
            return .kept(participantID: id, permission: permission, lookup: identity == nil ? nil : lookup, role: role)
        }
        // An owner's entry that names no one (a client's placeholder) can drop no one: skipped.
        if role == .owner, info.isEmpty { return nil }
        return .invited(lookup, permission: permission, role: role)
    }
}
