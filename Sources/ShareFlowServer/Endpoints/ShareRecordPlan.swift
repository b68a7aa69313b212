import Foundation
import ShareFlow

/// A share record of `records/modify` (Apple spells its type `cloudkit.share`) as the Share
/// object it stands for: made for its root, or the server's at the copy's tag, with the
/// participants and permissions listed (R2, R26, R35).
enum ShareRecordPlan {
    typealias Object = WireFormat.Object

    /// The Share object a share record of records/modify stands for: on `create`, a new share
    /// of `forRecord` (saved in this request, or already on the server: Apple's two-request
    /// flow); otherwise the server's share at the given tag. Its participants become those listed, named by `userIdentity.lookupInfo` and
    /// resolved as FetchShareParticipants does (no account: R2); `publicPermission` as given.
    static func share(
        _ n: Int,
        _ rec: Object,
        type: String,
        name: String,
        zone: RecordZoneID,
        db: CloudDatabase,
        plans: [Record],
        companion: inout Record?
    ) throws -> Share {
        let field = "operations[\(n)].record"
        let share: Share
        if type == "create" {
            guard let forRecord = try WireFormat.object(rec["forRecord"], field: "\(field).forRecord"),
                let rootName = try WireFormat.string(forRecord["recordName"], field: "\(field).forRecord.recordName")
            else {
                throw CloudKitError.badRequest("\(field).forRecord.recordName is required to create a share")
            }
            let tag = try WireFormat.string(forRecord["recordChangeTag"], field: "\(field).forRecord.recordChangeTag")
            if let root = plans.first(where: { $0.recordID.recordName == rootName }) {
                share = Share(rootRecord: root, recordName: name)
            } else {
                // A root saved by an earlier request, at the tag the client holds: saved again
                // with its share, in this request (R5), so a changed root is CONFLICT.
                let root = try db.fetchRecord(RecordID(recordName: rootName, zoneID: zone))
                if let tag, tag != root.recordChangeTag {
                    throw ShareFlowError(
                        .serverRecordChanged,
                        "record \(rootName) changed on the server since this copy (forRecord.recordChangeTag \(tag), server's \(root.recordChangeTag ?? "?")) (R21)"
                    )
                }
                companion = root
                share = Share(rootRecord: root, recordName: name)
            }
        } else {
            guard let server = try db.fetchRecord(RecordID(recordName: name, zoneID: zone)) as? Share else {
                throw ShareFlowError(.invalidArguments, "record \(name) is not a share")
            }
            if type == "update" || type == "replace" {
                let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
                guard tag == server.recordChangeTag else {
                    throw ShareFlowError(
                        .serverRecordChanged,
                        "share \(name) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)"
                    )
                }
            }
            share = server
        }
        if let p = try WireFormat.permission(rec["publicPermission"], field: "\(field).publicPermission") { share.publicPermission = p }
        if let fields = try WireFormat.object(rec["fields"], field: "\(field).fields") {
            for (key, value) in fields { share.fields[key] = try WireFormat.fieldValue(value, field: key, zone: zone) }
        }
        guard let listed = try WireFormat.items(rec["participants"], field: "\(field).participants") else { return share }
        // Who may change participants is decided before any address is looked up: a request
        // that would fail anyway resolves no one (no participant.fetched for plugins to log).
        try requireParticipantManager(share, creating: type == "create", db: db, zone: zone, item: "share \(name)")
        var keep = Set<String>()
        var permissionChanged = false
        for (m, raw) in listed.enumerated() {
            guard let p = raw as? Object else { throw CloudKitError.badRequest("\(field).participants[\(m)] must be an object") }
            if try WireFormat.string(p["type"], field: "\(field).participants[\(m)].type") == "OWNER" { continue }
            let permission = try WireFormat.permission(p["permission"], field: "\(field).participants[\(m)].permission") ?? .readOnly
            if let id = try WireFormat.string(p["participantId"], field: "\(field).participants[\(m)].participantId"),
                let existing = share.participants.first(where: { $0.participantID == id })
            {
                if existing.permission != permission { permissionChanged = true }
                existing.permission = permission
                keep.insert(id)
                continue
            }
            let at = "\(field).participants[\(m)].userIdentity"
            let identity = try WireFormat.object(p["userIdentity"], field: at)
            let info = try WireFormat.object(identity?["lookupInfo"], field: at + ".lookupInfo") ?? [:]
            let request = LookupRequest(
                emailAddress: try WireFormat.string(info["emailAddress"], field: at + ".lookupInfo.emailAddress"),
                phoneNumber: try WireFormat.string(info["phoneNumber"], field: at + ".lookupInfo.phoneNumber"),
                userRecordID: try WireFormat.string(info["userRecordName"], field: at + ".lookupInfo.userRecordName")
            )
            let participant = try WireFormat.only(db.container.fetchShareParticipantResults([request]))
            participant.permission = permission
            share.addParticipant(participant)
            if let same = share.participants.first(where: { $0 === participant || $0.userIdentity.lookupInfo == participant.userIdentity.lookupInfo })
            {
                keep.insert(same.participantID)
            }
        }
        for p in share.participants where p.role != .owner && !keep.contains(p.participantID) { share.removeParticipant(p) }
        // R35: a share's participants are saved only from the server's current copy, whatever
        // the operationType: a forced save that changes them needs the copy's change tag (a list
        // built before someone accepted would take them off).
        if type.hasPrefix("force"), !share.addedParticipantIDs.isEmpty || !share.removedParticipantIDs.isEmpty || permissionChanged {
            let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
            guard let tag, tag == share.recordChangeTag else {
                throw ShareFlowError(
                    .serverRecordChanged,
                    "share \(name): its participants are saved only from the server's current copy, whatever the operationType (recordChangeTag \(tag ?? "missing"), server's \(share.recordChangeTag ?? "?")) (R35)"
                )
            }
        }
        return share
    }

    /// R26 before R2: the caller may change this share's participants — its owner (a new share
    /// in their own zone, which exists), or its owner or an administrator (a saved one).
    private static func requireParticipantManager(_ share: Share, creating: Bool, db: CloudDatabase, zone: RecordZoneID, item: String) throws {
        if creating {
            guard db.databaseScope == .private else {
                throw ShareFlowError(.permissionFailure, "\(item): shares are made by their owner, in the private database")
            }
            let zones = try db.fetchAllRecordZones()
            guard zone.isDefaultZone || zones.contains(where: { $0.zoneID.zoneName == zone.zoneName }) else {
                throw ShareFlowError(.zoneNotFound, "zone '\(zone.zoneName)' does not exist; save it first")
            }
            return
        }
        let role = share.currentUserParticipant?.role
        guard role == .owner || role == .administrator else {
            throw ShareFlowError(.permissionFailure, "\(item): only its owner or an administrator changes its participants (R26)")
        }
    }
}
