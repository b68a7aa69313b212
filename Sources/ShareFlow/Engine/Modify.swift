import Foundation
import GRDB

/// Saving and deleting records and shares: R3, R4, R5, R6, R8, R9, R11, R13, R14.
extension Engine {
    func modifyRecords(saving: [Record], deleting: [RecordID], in database: CloudDatabase) throws -> ModifyResult {
        var result = ModifyResult()
        try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            var outcomes = [Result<Record, ShareFlowError>?](repeating: nil, count: saving.count)
            var savedIDs = Set<RecordID>()
            // Plain records first, so a new share finds its root saved in the same call (R5).
            let order = saving.indices.filter { !(saving[$0] is Share) } + saving.indices.filter { saving[$0] is Share }
            for i in order {
                let record = saving[i]
                do {
                    let saved = try transaction { db -> Record in
                        if let share = record as? Share {
                            return try saveShare(share, in: database, caller: caller, savedInThisCall: savedIDs, db: db)
                        }
                        return try saveRecord(record, in: database, caller: caller, db: db)
                    }
                    savedIDs.insert(record.recordID)
                    outcomes[i] = .success(saved)
                } catch {
                    outcomes[i] = .failure(ShareFlowError.wrap(error))
                }
            }
            for (record, outcome) in zip(saving, outcomes) {
                result.saveResults.append((record, outcome!))
                if case .success(let r) = outcome! { result.saved.append(r) }
            }
            for id in deleting {
                do {
                    try transaction { db in try deleteRecord(id, in: database, caller: caller, db: db) }
                    result.deleteResults.append((id, .success(())))
                    result.deleted.append(id)
                } catch {
                    result.deleteResults.append((id, .failure(ShareFlowError.wrap(error))))
                }
            }
        }
        return result
    }

    // MARK: Records

    func saveRecord(_ record: Record, in database: CloudDatabase, caller: Account, db: Database) throws -> Record {
        let id = record.recordID
        let item = "record \(id.recordName)"
        guard !id.recordName.isEmpty else { throw ShareFlowError.invalid("a record needs a recordName") }
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        if let parent = record.parent {
            guard parent.zoneID == id.zoneID else {
                throw ShareFlowError.invalid("\(item): its parent \(parent) must be in the same zone \(id.zoneID) (R4)")
            }
            guard parent.recordName != id.recordName else { throw ShareFlowError.invalid("\(item) cannot be its own parent") }
        }
        let existing = try recordRow(zone: zone, name: id.recordName, db: db)
        if record.recordType == Share.recordType || existing?.type == Share.recordType {
            throw ShareFlowError.invalid("\(item): records of type cloudkit.share are saved as Share objects")
        }
        if let existing, existing.type != record.recordType {
            throw ShareFlowError.invalid("\(item) has type \(existing.type); it cannot be saved as \(record.recordType)")
        }
        if database.databaseScope == .shared {
            // R13: a participant saves into a share that covers the record (or its new parent).
            let covering = existing != nil
                ? try shareCovering(zone: zone, recordName: id.recordName, db: db)
                : try shareCovering(zone: zone, recordName: record.parent?.recordName, db: db)
            guard let covering, let me = try participantRow(share: covering.id, account: caller.id, db: db) else {
                throw ShareFlowError.denied("\(item) is not in a share \(caller.email ?? caller.userRecordID) participates in")
            }
            try SharingRules.require(.modifyRecords, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: covering.publicPermission != .none, item: item)
            if let parent = record.parent, parent.recordName != existing?.parentName,
               try shareCovering(zone: zone, recordName: parent.recordName, db: db)?.id != covering.id {
                throw ShareFlowError.denied("\(item): a participant cannot move a record out of the share (R13)")
            }
        }
        // R5: a record rooting a share cannot move under another shared record.
        if let parent = record.parent, parent.recordName != existing?.parentName,
           let rooted = try shareRow(rootName: id.recordName, zone: zone, db: db),
           let above = try shareCovering(zone: zone, recordName: parent.recordName, db: db), above.id != rooted.id {
            throw ShareFlowError(.alreadyShared, "\(item) roots share \(rooted.recordName) and cannot join share \(above.recordName) under \(parent.recordName) (R5)")
        }
        let fields = String(decoding: try JSONEncoder().encode(record.fields), as: UTF8.self)
        let now = Date().timeIntervalSince1970
        if let existing {
            try db.execute(sql: "UPDATE record SET fields = ?, parentName = ?, changeTag = changeTag + 1, modifiedBy = ?, modifiedAt = ? WHERE id = ?",
                           arguments: [fields, record.parent?.recordName, caller.id, now, existing.id])
        } else {
            try db.execute(sql: """
                INSERT INTO record (zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt)
                VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)
                """, arguments: [zone.id, id.recordName, record.recordType, fields, record.parent?.recordName, caller.id, caller.id, now])
        }
        guard let savedRow = try recordRow(zone: zone, name: id.recordName, db: db) else {
            throw ShareFlowError(.unknownItem, "\(item) was deleted while it was being saved (by a policy)")
        }
        let saved = try makeRecord(savedRow, zone: zone, caller: caller, db: db)
        record.recordChangeTag = saved.recordChangeTag
        record.modificationDate = saved.modificationDate
        return saved
    }

    // MARK: Shares

    func saveShare(_ share: Share, in database: CloudDatabase, caller: Account, savedInThisCall: Set<RecordID>,
                   db: Database) throws -> Share {
        let id = share.recordID
        let item = "share \(share.title.map { "'\($0)'" } ?? id.recordName)"
        let container = database.container.containerIdentifier
        guard database.databaseScope != .public else {
            throw ShareFlowError(.badDatabase, "\(item): sharing happens only in a private database's custom zone, not the public database (R3)")
        }
        guard !id.zoneID.isDefaultZone else {
            throw ShareFlowError.invalid("\(item): sharing happens only in a custom zone; \(id.zoneID.zoneName) is the default zone (R3)")
        }
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        var stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
        let created = stored == nil
        var me: ParticipantRow?

        if let existing = stored {
            me = try participantRow(share: existing.id, account: caller.id, db: db)
            guard let me else { throw ShareFlowError.unknown("\(item) does not exist") }
            if me.role != .owner {
                try SharingRules.require(.manageParticipants, role: me.role, permission: me.permission, status: me.status,
                                         isPublicShare: existing.publicPermission != .none, item: item)
            }
            try checkPolicy(PolicyRequest(point: .shareSave, caller: caller, container: container, share: share), item: item)
            let fields = String(decoding: try JSONEncoder().encode(share.fields), as: UTF8.self)
            try db.execute(sql: "UPDATE record SET fields = ?, changeTag = changeTag + 1, modifiedBy = ?, modifiedAt = ? WHERE id = ?",
                           arguments: [fields, caller.id, Date().timeIntervalSince1970, existing.recordID])
        } else {
            guard database.databaseScope == .private else {
                throw ShareFlowError.denied("\(item): only the zone's owner creates shares, in their private database")
            }
            try checkNotAlreadyShared(share, zone: zone, savedInThisCall: savedInThisCall, item: item, db: db)
            try checkPolicy(PolicyRequest(point: .shareSave, caller: caller, container: container, share: share), item: item)
            let fields = String(decoding: try JSONEncoder().encode(share.fields), as: UTF8.self)
            try db.execute(sql: """
                INSERT INTO record (zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt)
                VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?)
                """, arguments: [zone.id, id.recordName, Share.recordType, fields, caller.id, caller.id, Date().timeIntervalSince1970])
            let recordRowID = db.lastInsertedRowID
            try db.execute(sql: "INSERT INTO share (recordID, zoneID, url, rootName, publicPermission) VALUES (?, ?, ?, ?, 'none')",
                           arguments: [recordRowID, zone.id, Engine.newShareURL(), share.rootRecordID?.recordName])
            let shareID = db.lastInsertedRowID
            try db.execute(sql: """
                INSERT INTO participant (shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt)
                VALUES (?, ?, ?, ?, ?, 'owner', 'readWrite', 'accepted', ?)
                """, arguments: [shareID, RandomIdentifier.uuidString(), caller.id, caller.primaryLookup.kind, caller.primaryLookup.value,
                                 Date().timeIntervalSince1970])
            stored = try shareRow(zone: zone, recordName: id.recordName, db: db)
            me = try participantRow(share: shareID, account: caller.id, db: db)
        }
        let row = stored!, mine = me!
        let isPublic = share.publicPermission != .none

        // R11: changing publicPermission removes pending participants; `none` removes all but the owner.
        if share.publicPermission != row.publicPermission {
            guard share.publicPermission != .unknown else {
                throw ShareFlowError.invalid("\(item): publicPermission 'unknown' cannot be set")
            }
            try SharingRules.require(.changePublicPermission, role: mine.role, permission: mine.permission, status: mine.status,
                                     isPublicShare: isPublic, item: item)
            try checkPolicy(PolicyRequest(point: .sharePublicPermission, caller: caller, container: container, share: share,
                                          from: row.publicPermission.rawValue, to: share.publicPermission.rawValue), item: item)
            try db.execute(sql: "UPDATE share SET publicPermission = ? WHERE id = ?", arguments: [share.publicPermission.rawValue, row.id])
            for p in try participantRows(share: row.id, db: db) where p.role != .owner {
                let matches = share.publicPermission == .none ? p.status != .removed : p.status == .pending
                guard matches else { continue }
                try setStatus(.removed, of: p, share: share, reason: .publicPermissionChanged, caller: caller, container: container, db: db)
            }
            var event = Event(.sharePublicPermissionChanged, caller: caller, container: container)
            event.share = share
            event.from = row.publicPermission.rawValue
            event.to = share.publicPermission.rawValue
            emit(event)
        }

        try applyParticipantChanges(share, row: row, me: mine, caller: caller, container: container, item: item, db: db)

        // R8
        let count = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM participant WHERE shareID = ? AND status != 'removed'"), arguments: [row.id]) ?? 0
        if count > options.maxParticipants {
            throw ShareFlowError(.tooManyParticipants, "\(item) would have \(count) participants; a share holds at most \(options.maxParticipants), owner included (R8)")
        }

        // A policy consulted during this save may have deleted the share (its own nested write).
        guard let savedRow = try shareRow(zone: zone, recordName: id.recordName, db: db) else {
            throw ShareFlowError(.unknownItem, "\(item) was deleted while it was being saved (by a policy)")
        }
        let fresh = try makeShare(savedRow, zone: zone, caller: caller, db: db)
        share.refresh(from: fresh)
        var event = Event(.shareSaved, caller: caller, container: container)
        event.share = fresh
        event.created = created
        emit(event)
        return fresh
    }

    /// R5: the root is saved in this call, and neither it, its ancestors, its descendants nor
    /// its zone is shared already.
    private func checkNotAlreadyShared(_ share: Share, zone: ZoneRow, savedInThisCall: Set<RecordID>, item: String, db: Database) throws {
        if let zoneShare = try zoneShareRow(zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): zone \(zone.zoneID.zoneName) is already shared by \(zoneShare.recordName) (R5)")
        }
        guard let rootID = share.rootRecordID else {
            if let any = try String.fetchOne(db.cachedStatement(sql: "SELECT rootName FROM share WHERE zoneID = ? LIMIT 1"), arguments: [zone.id]) {
                throw ShareFlowError(.alreadyShared, "\(item): record \(any) in zone \(zone.zoneID.zoneName) is already shared; a zone share needs an unshared zone (R5)")
            }
            return
        }
        guard savedInThisCall.contains(rootID) else {
            throw ShareFlowError.invalid("\(item) must be saved in the same modifyRecords call as its root record \(rootID.recordName) (R5)")
        }
        if let existing = try shareRow(rootName: rootID.recordName, zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): record \(rootID.recordName) is already shared by \(existing.recordName) (R5)")
        }
        let parentName = try String.fetchOne(db.cachedStatement(sql: "SELECT parentName FROM record WHERE zoneID = ? AND name = ?"), arguments: [zone.id, rootID.recordName])
        if let parentName, let above = try shareCovering(zone: zone, recordName: parentName, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): an ancestor of \(rootID.recordName) is already shared by \(above.recordName) (R5)")
        }
        if let below = try String.fetchOne(db.cachedStatement(sql: """
            WITH RECURSIVE d(name) AS (
                SELECT name FROM record WHERE zoneID = ?1 AND parentName = ?2
                UNION SELECT r.name FROM record r JOIN d ON r.zoneID = ?1 AND r.parentName = d.name)
            SELECT rootName FROM share WHERE zoneID = ?1 AND rootName IN (SELECT name FROM d) LIMIT 1
            """), arguments: [zone.id, rootID.recordName]) {
            throw ShareFlowError(.alreadyShared, "\(item): descendant \(below) of \(rootID.recordName) is already shared (R5)")
        }
    }

    /// R9: adds, re-adds, updates and removes participants as the share object says.
    private func applyParticipantChanges(_ share: Share, row: ShareRow, me: ParticipantRow, caller: Account,
                                         container: String, item: String, db: Database) throws {
        var rows = try participantRows(share: row.id, db: db)
        func requireManage() throws {
            try SharingRules.require(.manageParticipants, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: share.publicPermission != .none, item: item)
        }
        for p in share.participants where p.role != .owner {
            guard p.permission != .unknown else {
                throw ShareFlowError.invalid("\(item): participant \(p.userIdentity) needs a permission other than 'unknown'")
            }
            var matched: Int64?
            if let userRecordID = p.userIdentity.userRecordID { matched = try accountID(for: .userRecordID(userRecordID), db: db) }
            let byID = rows.first(where: { $0.participantID == p.participantID })
            let existing = byID ?? rows.first(where: { isSamePerson($0, accountID: matched, lookup: p.userIdentity.lookupInfo) })
            if let existing, existing.role == .owner { continue }
            // Removed on the server since this object was read: only an explicit add brings them back.
            if let existing, existing.status == .removed, !share.addedParticipantIDs.contains(p.participantID) { continue }
            if let existing, existing.status != .removed {
                guard existing.permission != p.permission else { continue }
                try requireManage()
                try db.execute(sql: "UPDATE participant SET permission = ? WHERE id = ?", arguments: [p.permission.rawValue, existing.id])
                var event = Event(.participantPermissionChanged, caller: caller, container: container)
                event.share = share
                event.participant = p
                event.from = existing.permission.rawValue
                event.to = p.permission.rawValue
                emit(event)
                continue
            }
            // A new participant, or a removed one added again.
            try requireManage()
            guard share.publicPermission == .none else {
                throw ShareFlowError.invalid("\(item): participants can be added only while publicPermission is none; it is \(share.publicPermission.rawValue) (R9)")
            }
            try checkPolicy(PolicyRequest(point: .participantAdd, caller: caller, container: container, share: share, participant: p), item: item)
            let lookup = p.userIdentity.lookupInfo ?? .userRecordID(p.userIdentity.userRecordID ?? "")
            if let existing {
                try db.execute(sql: "UPDATE participant SET status = 'pending', role = 'privateUser', permission = ?, addedAt = ? WHERE id = ?",
                               arguments: [p.permission.rawValue, Date().timeIntervalSince1970, existing.id])
            } else {
                try db.execute(sql: """
                    INSERT INTO participant (shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt)
                    VALUES (?, ?, ?, ?, ?, 'privateUser', ?, 'pending', ?)
                    """, arguments: [row.id, p.participantID, matched, lookup.kind, lookup.value, p.permission.rawValue,
                                     Date().timeIntervalSince1970])
            }
            rows = try participantRows(share: row.id, db: db)
            p.acceptanceStatus = .pending
            p.role = .privateUser
            var event = Event(.participantAdded, caller: caller, container: container)
            event.share = share
            event.participant = p
            emit(event)
        }
        for removedID in share.removedParticipantIDs {
            guard let r = rows.first(where: { $0.participantID == removedID }), r.status != .removed else { continue }
            guard r.role != .owner else { throw ShareFlowError.invalid("\(item): the owner cannot be removed from their own share") }
            try requireManage()
            try setStatus(.removed, of: r, share: share, reason: .removedByOwner, caller: caller, container: container, db: db)
        }
    }

    private func isSamePerson(_ row: ParticipantRow, accountID: Int64?, lookup: LookupInfo?) -> Bool {
        if let accountID, row.accountID == accountID { return true }
        return row.accountID == nil && lookup != nil && lookup == row.lookup
    }

    /// Changes a participant's status; a removal emits `participant.removed` with its reason.
    func setStatus(_ status: ParticipantAcceptanceStatus, of row: ParticipantRow, share: Share?, reason: RemovalReason?,
                   caller: Account, container: String, db: Database) throws {
        try db.execute(sql: "UPDATE participant SET status = ? WHERE id = ?", arguments: [status.rawValue, row.id])
        guard status == .removed, let reason else { return }
        var event = Event(.participantRemoved, caller: caller, container: container)
        event.share = share
        var updated = row
        updated.status = .removed
        event.participant = try participantObject(updated, db: db)
        event.reason = reason.rawValue
        emit(event)
    }

    // MARK: Deleting

    func deleteRecord(_ id: RecordID, in database: CloudDatabase, caller: Account, db: Database) throws {
        let item = "record \(id.recordName)"
        let container = database.container.containerIdentifier
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        guard let row = try recordRow(zone: zone, name: id.recordName, db: db) else {
            throw ShareFlowError.unknown("\(item) does not exist in zone \(id.zoneID)")
        }
        if row.type == Share.recordType, let share = try shareRow(zone: zone, recordName: row.name, db: db) {
            if database.databaseScope == .private {
                try endShare(share, zone: zone, caller: caller, container: container, db: db)
                return
            }
            // R14: a participant deleting the share leaves it; it stays for everyone else.
            guard let me = try participantRow(share: share.id, account: caller.id, db: db) else {
                throw ShareFlowError.unknown("\(item) does not exist")
            }
            try SharingRules.require(.deleteShare, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: share.publicPermission != .none, item: "share \(row.name)")
            let shareObject = try makeShare(share, zone: zone, caller: caller, db: db)
            try setStatus(.removed, of: me, share: shareObject, reason: .left, caller: caller, container: container, db: db)
            return
        }
        if database.databaseScope == .shared {
            guard let covering = try shareCovering(zone: zone, recordName: row.name, db: db),
                  let me = try participantRow(share: covering.id, account: caller.id, db: db),
                  SharingRules.decide(.readRecords, role: me.role, permission: me.permission, status: me.status,
                                      isPublicShare: covering.publicPermission != .none).isAllowed else {
                throw ShareFlowError.unknown("\(item) does not exist")
            }
            if covering.rootName == row.name {
                try SharingRules.require(.deleteRootRecord, role: me.role, permission: me.permission, status: me.status,
                                         isPublicShare: covering.publicPermission != .none, item: item)
            }
            try SharingRules.require(.modifyRecords, role: me.role, permission: me.permission, status: me.status,
                                     isPublicShare: covering.publicPermission != .none, item: item)
        }
        // R13: deleting a hierarchy's root deletes its share.
        if let rooted = try shareRow(rootName: row.name, zone: zone, db: db) {
            try endShare(rooted, zone: zone, caller: caller, container: container, db: db)
        }
        try db.execute(sql: "DELETE FROM record WHERE id = ?", arguments: [row.id])
    }

    /// R14: the owner deleting a share ends it for everyone.
    private func endShare(_ share: ShareRow, zone: ZoneRow, caller: Account, container: String, db: Database) throws {
        let object = try makeShare(share, zone: zone, caller: caller, db: db)
        for p in try participantRows(share: share.id, db: db) where p.role != .owner && p.status != .removed {
            try setStatus(.removed, of: p, share: object, reason: .shareDeleted, caller: caller, container: container, db: db)
        }
        try db.execute(sql: "DELETE FROM record WHERE id = ?", arguments: [share.recordID])
        var event = Event(.shareDeleted, caller: caller, container: container)
        event.share = object
        emit(event)
    }

    /// R6: 192 random bits, URL-safe.
    static func newShareURL() -> String {
        let token = Data(RandomIdentifier.bytes(24)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "https://shareflow.invalid/share/" + token
    }
}

extension Account {
    /// How the account is named on its own participant row.
    var primaryLookup: LookupInfo {
        if let e = email { return .emailAddress(e) }
        if let p = phones.first { return .phoneNumber(p) }
        return .userRecordID(userRecordID)
    }
}

extension ShareFlowError {
    /// Any error as a ShareFlow error (store failures become `serviceUnavailable`).
    static func wrap(_ error: Error) -> ShareFlowError {
        if let e = error as? ShareFlowError { return e }
        return ShareFlowError(.serviceUnavailable, "store error: \(error)")
    }
}

extension Share {
    /// Takes the server's state after a save.
    func refresh(from server: Share) {
        url = server.url
        participants = server.participants
        currentUserParticipant = server.currentUserParticipant
        publicPermission = server.publicPermission
        recordChangeTag = server.recordChangeTag
        modificationDate = server.modificationDate
        removedParticipantIDs = []
        addedParticipantIDs = []
    }
}
