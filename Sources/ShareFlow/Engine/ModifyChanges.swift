import Foundation

/// How one save of a modify call finds what it writes.
enum ModifySave {
    /// The record or share as given, its change tag checked as the policy says (R21).
    case given(Record, RecordSavePolicy)
    /// `RecordChange.update` (`merge`, taking off the fields `removing` names) or `.replace`:
    /// made from the server's copy read in the save.
    case edit(Record, merge: Bool, removing: Set<String>, tag: String?, force: Bool)
    /// A share made from its draft in the save; the placeholder names it before then.
    case draft(ShareDraft, placeholder: Share)

    /// What orders, scopes and names the save before it is made.
    var record: Record {
        switch self {
        case .given(let record, _), .edit(let record, _, _, _, _): record
        case .draft(_, let placeholder): placeholder
        }
    }
}

/// `RecordChange`s, as `records/modify` sends them: every comparison with the server's copy
/// made in the call's own write transaction, so nothing read before it can go stale between
/// the read and the write (another node's write in between is simply what the save finds).
extension Engine {
    func modify(_ changes: [RecordChange], atomic: Bool, in database: CloudDatabase) throws -> [Result<RecordChangeOutcome, ShareFlowError>] {
        var saving: [ModifySave] = []
        var deleting: [RecordID] = []
        var deleteTags: [RecordID: String] = [:]
        // Each change's place among the saves or the deletes.
        var places: [(isSave: Bool, index: Int)] = []
        for change in changes {
            switch change {
            case .create(let record):
                places.append((true, saving.count))
                saving.append(.given(record, .ifServerRecordUnchanged))
            case .update(let record, let tag, let force, let removing):
                places.append((true, saving.count))
                saving.append(.edit(record, merge: true, removing: removing, tag: tag, force: force))
            case .replace(let record, let tag, let force):
                places.append((true, saving.count))
                saving.append(.edit(record, merge: false, removing: [], tag: tag, force: force))
            case .share(let draft):
                places.append((true, saving.count))
                let root: RecordID? =
                    switch draft.target {
                    case .new(let rootName, _): RecordID(recordName: rootName, zoneID: draft.zoneID)
                    case .existing, .zone: nil
                    }
                saving.append(.draft(draft, placeholder: Share(recordID: draft.recordID, rootRecordID: root)))
            case .delete(let id, let tag):
                places.append((false, deleting.count))
                deleting.append(id)
                if let tag { deleteTags[id] = tag }
            }
        }
        let (saves, deletes) = try modify(saving: saving, deleting: deleting, deleteTags: deleteTags, atomic: atomic, in: database)
        return places.map { place in
            place.isSave ? saves[place.index].map { .saved($0) } : deletes[place.index].map { .deleted(deleting[place.index]) }
        }
    }

    /// The record an update or a replace saves, made from the server's copy as this save reads
    /// it: at the copy's tag (R21), or forced; a forced one of a record that does not exist is
    /// made (R36: Apple's "creates a record if it doesn't exist").
    func editedRecord(
        _ record: Record,
        merge: Bool,
        removing: Set<String> = [],
        tag: String?,
        force: Bool,
        in database: CloudDatabase,
        caller: Account,
        db: StoreTransaction
    ) throws -> Record {
        let id = record.recordID
        let server: Record
        do {
            server = try self.record(id, in: database, caller: caller, db: db)
        } catch let e as ShareFlowError where e.code == .unknownItem && force {
            let made = Record(recordType: record.recordType, recordID: id, fields: record.fields, parent: record.parent)
            made.requestsShortGUID = record.requestsShortGUID
            return made
        }
        if !force {
            guard let tag, tag == server.recordChangeTag else {
                throw ShareFlowError(
                    .serverRecordChanged,
                    "record \(Naming.printable(id.recordName)) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)"
                )
            }
        }
        // An update puts the given fields over the server's, less those it takes off; a
        // replace is the record given.
        var fields = merge ? server.fields.merging(record.fields) { _, new in new } : record.fields
        for key in removing { fields[key] = nil }
        let edited = Record(
            recordType: record.recordType,
            recordID: id,
            fields: fields,
            parent: record.parent ?? (merge ? server.parent : nil)
        )
        edited.assumeServerCopy(of: server)
        edited.requestsShortGUID = record.requestsShortGUID
        return edited
    }

    /// The share a draft describes, made from the store as this save reads it. Who may change
    /// its participants is decided before anyone is looked up (R26 before R2): a save that
    /// would fail anyway resolves no one and tells `participant.fetched`'s observers nothing.
    /// `saved` and `unsaved`: the records this call saved or failed to before the share.
    func share(
        from draft: ShareDraft,
        in database: CloudDatabase,
        caller: Account,
        saved: [RecordID: Record],
        unsaved: [RecordID: ShareFlowError],
        atomic: Bool,
        db: StoreTransaction
    ) throws -> Share {
        let item = "share \(Naming.printable(draft.recordName))"
        let share: Share
        switch draft.target {
        case .new(let rootName, let rootTag):
            // R3, then R26: where shares are made, then by whom.
            let zone = try sharingZone(for: draft.zoneID, in: database, caller: caller, item: item, db: db)
            guard database.databaseScope == .private else {
                throw ShareFlowError.denied("\(item): shares are made by their owner, in the private database")
            }
            let rootID = RecordID(recordName: rootName, zoneID: draft.zoneID)
            if let root = saved[rootID] {
                // A copy: the root's own answer names no share this save may yet roll back.
                share = Share(rootRecord: root.duplicate(), recordName: draft.recordName)
            } else if let failure = unsaved[rootID] {
                // Failed because its root did (R5): in an atomic call, as every item the
                // failure takes with it (R22); in another, as a share saved without its root.
                let reason = "its root record \(Naming.printable(rootName)) was not saved (\(failure.message))"
                throw atomic
                    ? ShareFlowError(.batchRequestFailed, "\(item) was not applied: the call is atomic and \(reason) (R22)")
                    : ShareFlowError.invalid("\(item): \(reason); a share is saved with its root (R5)")
            } else {
                // A root saved by an earlier request, at the tag the client holds: saved again
                // with its share (its change tag moves, as a root's does when shared).
                guard let row = try recordRow(zone: zone, name: rootName, db: db) else {
                    throw ShareFlowError.unknown("record \(rootID) does not exist")
                }
                if let rootTag, rootTag != row.tag {
                    throw ShareFlowError(
                        .serverRecordChanged,
                        "record \(Naming.printable(rootName)) changed on the server since this copy (forRecord.recordChangeTag \(rootTag), server's \(row.tag)) (R21)"
                    )
                }
                let root = try makeRecord(row, zone: zone, caller: caller, db: db)
                let again = try saveRecord(
                    root,
                    in: database,
                    caller: caller,
                    policy: .ifServerRecordUnchanged,
                    savedInThisCall: Set(saved.keys),
                    db: db
                )
                share = Share(rootRecord: again, recordName: draft.recordName)
            }
        case .zone:
            // R3, then R26, as for a share of a root; R5 judges the rest in the save.
            _ = try sharingZone(for: draft.zoneID, in: database, caller: caller, item: item, db: db)
            guard database.databaseScope == .private else {
                throw ShareFlowError.denied("\(item): shares are made by their owner, in the private database")
            }
            guard draft.recordName == Share.zoneShareName else {
                throw ShareFlowError.invalid("\(item): a zone's share is named \(Share.zoneShareName) (R5)")
            }
            share = Share(zoneID: draft.zoneID)
        case .existing(let tag, let force):
            guard let server = try record(draft.recordID, in: database, caller: caller, db: db) as? Share else {
                throw ShareFlowError.invalid("record \(Naming.printable(draft.recordName)) is not a share")
            }
            if !force, tag != server.recordChangeTag {
                throw ShareFlowError(
                    .serverRecordChanged,
                    "\(item) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)"
                )
            }
            share = server
        }
        if let permission = draft.publicPermission { share.publicPermission = permission }
        if let allows = draft.allowsAccessRequests { share.allowsAccessRequests = allows }
        try applyAccessChanges(of: draft, to: share, item: item)
        for (key, value) in draft.fields ?? [:] { share.fields[key] = value }
        guard let listed = draft.participants else { return share }
        if case .existing = draft.target {
            let role = share.currentUserParticipant?.role
            guard role == .owner || role == .administrator else {
                throw ShareFlowError.denied("\(item): only its owner or an administrator changes its participants (R26)")
            }
        }
        let container = database.container.containerIdentifier
        // Who is on the share how, before the draft: R35 asks whether the draft changes it.
        func standing() -> Set<String> { Set(share.participants.map { "\($0.participantID) \($0.permission.rawValue) \($0.role.rawValue)" }) }
        let before = standing()
        var keep = Set<String>()
        for wanted in listed {
            let lookup: LookupRequest
            let permission: ParticipantPermission
            let role: ParticipantRole?
            // An entry marked as the owner's must be the owner: it is skipped (the owner stays),
            // never a way to drop someone else from the list.
            let notOwner = ShareFlowError.invalid("\(item): a participant listed as the owner is not the share's owner (R26)")
            switch wanted {
            case .kept(let id, let kept, let named, let keptRole):
                if let existing = share.participants.first(where: { $0.participantID == id }) {
                    if existing.role == .owner { continue }
                    if keptRole == .owner { throw notOwner }
                    existing.permission = kept
                    if let keptRole { existing.role = keptRole }
                    keep.insert(id)
                    continue
                }
                lookup = named ?? LookupRequest()
                (permission, role) = (kept, keptRole)
            case .invited(let named, let invited, let invitedRole):
                lookup = named
                (permission, role) = (invited, invitedRole)
            }
            let info = try lookup.result.get()
            let participant = try participant(for: info, db: db)
            if role == .owner {
                guard share.participants.contains(where: { $0.role == .owner && $0.isSamePerson(as: participant) }) else { throw notOwner }
                continue
            }
            emitParticipantFetched(participant, for: info, caller: caller, container: container)
            participant.permission = permission
            if let role { participant.role = role }
            share.addParticipant(participant)
            // R9: someone already on the share (by account or by address) is kept, updated.
            if let same = share.participants.first(where: { $0 === participant || $0.isSamePerson(as: participant) }) {
                keep.insert(same.participantID)
            }
        }
        for p in share.participants where p.role != .owner && !keep.contains(p.participantID) { share.removeParticipant(p) }
        // R35: a share's participants are saved only from the server's current copy, whatever
        // the operation: a forced save that changes them needs the copy's change tag (a list
        // built before someone accepted would take them off).
        if case .existing(let tag, true) = draft.target, standing() != before, tag != share.recordChangeTag {
            throw ShareFlowError(
                .serverRecordChanged,
                "\(item): its participants are saved only from the server's current copy, whatever the operationType (recordChangeTag \(tag ?? "missing"), server's \(share.recordChangeTag ?? "?")) (R35)"
            )
        }
        return share
    }
}
