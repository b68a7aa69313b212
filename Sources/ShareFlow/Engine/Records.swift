import Foundation

/// Zones and records in the store, and who may see them.
extension Engine {
    static let publicOwnerName = "__defaultOwner__"

    /// The stored zone behind `zoneID` in `container` (public or private storage).
    /// `ownerID`: the owner's row when the caller knows it (the caller's own zone), else read
    /// by the zone's owner name.
    func zoneRow(
        _ zoneID: RecordZoneID,
        container: ContainerID,
        isPublic: Bool,
        create: Bool,
        ownerID knownOwner: Int64? = nil,
        db: StoreTransaction
    ) throws -> ZoneRow? {
        // A write's zones are claimed before they are read (SPEC §16 M5).
        try db.claim(zone: ZoneLockKey(container: container, zoneID: zoneID))
        let ownerID: Int64
        if isPublic {
            ownerID = 0
        } else if let knownOwner {
            ownerID = knownOwner
        } else {
            guard let id = try accountID(for: .userRecordID(zoneID.ownerName), db: db) else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneID): no account '\(zoneID.ownerName)' owns it")
            }
            ownerID = id
        }
        if let id = try db.zoneRowID(container: container, isPublic: isPublic, ownerID: ownerID, name: zoneID.zoneName) {
            return ZoneRow(id: id, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
        }
        // Default zones exist for everyone without being created; read before anything was
        // saved in one, it is empty (a row ID no record has).
        guard create || zoneID.isDefaultZone else { return nil }
        guard db.isWritable else { return ZoneRow(id: -1, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic) }
        let id = try db.insertZone(container: container, isPublic: isPublic, ownerID: ownerID, name: zoneID.zoneName)
        return ZoneRow(id: id, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
    }

    /// The zone a call in the public database or the caller's own private one addresses, as
    /// stored (R3; R24: the current user's name stands for the caller), and its owner's row;
    /// what it may not address is refused before any zone is read.
    func ownZoneID(_ zoneID: RecordZoneID, in database: CloudDatabase, caller: some CallerKey) throws -> (zoneID: RecordZoneID, ownerID: Int64) {
        switch database.databaseScope {
        case .public:
            guard zoneID.isDefaultZone else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneID.zoneName): the public database has only the default zone")
            }
            return (RecordZoneID(zoneName: zoneID.zoneName, ownerName: Engine.publicOwnerName), 0)
        case .private:
            let zoneID =
                zoneID.ownerName == RecordZoneID.currentUserName
                ? RecordZoneID(zoneName: zoneID.zoneName, ownerName: caller.userRecordID) : zoneID
            guard zoneID.ownerName == caller.userRecordID else {
                throw ShareFlowError.denied(
                    "zone \(zoneID) is in another user's private database; \(caller.email ?? caller.userRecordID) may use only their own"
                )
            }
            // The owner's name is the caller's, a user record name no other account has.
            return (zoneID, caller.id)
        case .shared:
            preconditionFailure("a shared database's zones are the owners' (zone(for:))")
        }
    }

    /// Why a custom zone of the caller's own private database is not found.
    static func ownZoneNotFound(_ zoneID: RecordZoneID, caller: some CallerKey) -> ShareFlowError {
        ShareFlowError(
            .zoneNotFound,
            "zone '\(zoneID.zoneName)' does not exist in the private database of \(caller.email ?? caller.userRecordID); save it first"
        )
    }

    /// The zone a database call addresses, checked against the database's scope (R3).
    func zone(for zoneID: RecordZoneID, in database: CloudDatabase, caller: some CallerKey, db: StoreTransaction) throws -> ZoneRow {
        let container = database.container.containerID
        switch database.databaseScope {
        case .public:
            return try zoneRow(
                try ownZoneID(zoneID, in: database, caller: caller).zoneID,
                container: container,
                isPublic: true,
                create: true,
                db: db
            )!
        case .private:
            let (zoneID, ownerID) = try ownZoneID(zoneID, in: database, caller: caller)
            guard let zone = try zoneRow(zoneID, container: container, isPublic: false, create: false, ownerID: ownerID, db: db) else {
                throw Engine.ownZoneNotFound(zoneID, caller: caller)
            }
            return zone
        case .shared:
            guard zoneID.ownerName != caller.userRecordID else {
                throw ShareFlowError(.invalidArguments, "zone \(zoneID) is the caller's own: use the private database")
            }
            // R27: a zone with no share the caller is in answers exactly as a zone that does not
            // exist, whoever its owner and whatever it holds.
            var notFound: ShareFlowError { ShareFlowError(.zoneNotFound, "zone \(zoneID) is not shared with \(caller.email ?? caller.userRecordID)") }
            try db.claim(zone: ZoneLockKey(container: container, zoneID: zoneID))
            guard let ownerID = try accountID(for: .userRecordID(zoneID.ownerName), db: db),
                let zoneRowID = try db.zoneSharedWith(caller.id, container: container, ownerID: ownerID, name: zoneID.zoneName)
            else { throw notFound }
            return ZoneRow(id: zoneRowID, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: false)
        }
    }

    func saveZone(_ name: String, in database: CloudDatabase) throws -> RecordZone {
        try Engine.requireSignedIn(database)
        guard database.databaseScope == .private else {
            throw ShareFlowError(.badDatabase, "zones can be created only in the private database, not the \(database.databaseScope.rawValue) one")
        }
        guard !name.isEmpty, name != RecordZoneID.defaultZoneName else {
            throw ShareFlowError.invalid("'\(name)' is not a valid custom zone name")
        }
        try Naming.check(text: name, "zone name")
        guard name.utf8.count <= Naming.maxLength else {
            throw ShareFlowError.invalid("a zone name of \(name.utf8.count) bytes; at most \(Naming.maxLength)")
        }
        return try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zoneID = RecordZoneID(zoneName: name, ownerName: caller.userRecordID)
            let existed = try db.zoneRowID(container: database.container.containerID, isPublic: false, ownerID: caller.id, name: name) != nil
            _ = try zoneRow(zoneID, container: database.container.containerID, isPublic: false, create: true, db: db)
            if !existed { emitZoneEvent(.zoneSaved, zoneID, database: database, caller: caller) }
            return RecordZone(zoneID: zoneID)
        }
    }

    func fetchAllRecordZones(in database: CloudDatabase) throws -> [RecordZone] {
        try reading { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let container = database.container.containerID
            switch database.databaseScope {
            case .public:
                return [RecordZone(zoneID: RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: Engine.publicOwnerName))]
            case .private:
                let names = try db.privateZoneNames(container: container, ownerID: caller.id).filter { $0 != RecordZoneID.defaultZoneName }
                return ([RecordZoneID.defaultZoneName] + names).map { RecordZone(zoneID: RecordZoneID(zoneName: $0, ownerName: caller.userRecordID)) }
            case .shared:
                // R12: the zones of the shares this caller has accepted.
                return try db.acceptedZones(of: caller.id, container: container).map { RecordZone(zoneID: $0) }
            }
        }
    }

    // MARK: Records

    func recordRow(zone: ZoneRow, name: String, db: StoreTransaction) throws -> RecordRow? {
        try db.record(zone: zone.id, name: name)
    }

    /// R31: the dates and the user records of creator and last modifier, as stored.
    static func stampMetadata(_ row: RecordRow, on record: Record) {
        record.modificationDate = Date(timeIntervalSince1970: row.modifiedAt)
        record.creationDate = Date(timeIntervalSince1970: row.createdAt)
        record.creatorUserRecordID = row.creatorName.map { RecordID(recordName: $0, zoneID: .default) }
        record.lastModifiedUserRecordID = row.modifierName.map { RecordID(recordName: $0, zoneID: .default) }
    }

    /// The record as the caller gets it (a `Share` for a share record).
    func makeRecord(_ row: RecordRow, zone: ZoneRow, caller: some CallerKey, db: StoreTransaction) throws -> Record {
        let recordID = RecordID(recordName: row.name, zoneID: zone.zoneID)
        if row.type == Share.recordType, let share = try shareRow(zone: zone, recordName: row.name, db: db) {
            return try makeShare(share, zone: zone, caller: caller, db: db)
        }
        let rooted: (recordName: String, token: String)?
        switch row.rootedShare {
        case .share(let name, let token): rooted = (name, token)
        case .none: rooted = nil
        case .notRead: rooted = try db.share(zone: zone.id, rootName: row.name).map { ($0.recordName, $0.token) }
        }
        // A record holding assets is read whole (the stored form's checker leaves assets to
        // the reader), and each asset learns where its bytes are.
        var fields = row.fieldsAsRead
        if case .decoded(let decoded) = fields, decoded.values.contains(where: \.holdsAsset) {
            fields = .decoded(sourcingAssets(decoded))
        }
        // The share's token is the short GUID of the record it roots.
        return Record(
            stored: row.type,
            recordID: recordID,
            fields: fields,
            parent: row.parentName.map { RecordID(recordName: $0, zoneID: zone.zoneID) },
            changeTag: row.tag,
            modificationDate: Date(timeIntervalSince1970: row.modifiedAt),
            creationDate: Date(timeIntervalSince1970: row.createdAt),
            creator: row.creatorName.map { RecordID(recordName: $0, zoneID: .default) },
            modifier: row.modifierName.map { RecordID(recordName: $0, zoneID: .default) },
            shortGUID: rooted?.token ?? row.shortGUID,
            storedBytes: row.storedBytes,
            share: rooted.map { RecordID(recordName: $0.recordName, zoneID: zone.zoneID) }
        )
    }

    func fetchRecord(_ id: RecordID, in database: CloudDatabase) throws -> Record {
        let callerID = database.container.session.accountID
        if database.databaseScope != .shared, callerID != Account.publicReader.id,
            let record = try ownRecordAlone(id, in: database, callerID: callerID)
        {
            return record
        }
        return try reading { db in
            // A read of the caller's own or the public database: one statement (`ownRecord`).
            // Inside a write (a hook's read), the public zone may be made and zones are
            // claimed (SPEC §16 M5): that is `record`'s way.
            if database.databaseScope != .shared, !db.isWritable, callerID != Account.publicReader.id {
                return try ownRecord(id, in: database, callerID: callerID, db: db)
            }
            return try record(id, in: database, caller: try accountIdentity(id: callerID, db: db), db: db)
        }
    }

    /// `ownRecord`'s one statement read alone (`readingAlone`: no BEGIN and COMMIT) where it
    /// answers the whole read: a record that is not a share, its rooted share read with it, in
    /// a zone that exists and the caller may address. Nil for everything else (a share, an
    /// error to say, a transaction open, a driver's store), which `ownRecord` reads again in a
    /// transaction: nothing below reads a second statement.
    private func ownRecordAlone(_ id: RecordID, in database: CloudDatabase, callerID: Int64) throws -> Record? {
        let isPublic = database.databaseScope == .public
        let container = database.container.containerID
        return try readingAlone { db -> Record? in
            guard let read = try ownRecordRead(id, in: database, callerID: callerID, db: db), let row = read.record,
                let zoneRowID = read.zone, row.type != Share.recordType
            else { return nil }
            if case .notRead = row.rootedShare { return nil }
            let named = CallerName(id: callerID, userRecordID: read.userRecordID)
            guard let (zoneID, ownerID) = try? ownZoneID(id.zoneID, in: database, caller: named) else { return nil }
            let zone = ZoneRow(id: zoneRowID, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
            return try makeRecord(row, zone: zone, caller: named, db: db)
        } ?? nil
    }

    /// `ownRecord`'s one statement for `id` in `database` (the caller's account, the zone, the
    /// record and its rooted share): nil when the caller has no account.
    private func ownRecordRead(
        _ id: RecordID,
        in database: CloudDatabase,
        callerID: Int64,
        db: StoreTransaction
    ) throws
        -> StoreTransaction.OwnRecordRead?
    {
        let isPublic = database.databaseScope == .public
        return try db.ownRecord(
            caller: callerID,
            container: database.container.containerID,
            isPublic: isPublic,
            ownerID: isPublic ? 0 : callerID,
            zoneName: id.zoneID.zoneName,
            recordName: id.recordName
        )
    }

    /// `record(_:in:caller:db:)` in the public database or the caller's own private one, read
    /// in one statement (the caller's name, the zone, the record): the same answers, decided in
    /// the same order — the caller, the zone they may address, whether it exists, the record.
    /// The caller's whole identity is read only where it is said (an error) or shown (a share).
    private func ownRecord(_ id: RecordID, in database: CloudDatabase, callerID: Int64, db: StoreTransaction) throws -> Record {
        let isPublic = database.databaseScope == .public
        let container = database.container.containerID
        guard let read = try ownRecordRead(id, in: database, callerID: callerID, db: db) else {
            throw ShareFlowError.unknown("no account with id \(callerID)")
        }
        let named = CallerName(id: callerID, userRecordID: read.userRecordID)
        let zoneID: RecordZoneID
        let ownerID: Int64
        do {
            (zoneID, ownerID) = try ownZoneID(id.zoneID, in: database, caller: named)
        } catch {
            // Said with the caller's address, as `zone(for:)` says it.
            (zoneID, ownerID) = try ownZoneID(id.zoneID, in: database, caller: try accountIdentity(id: callerID, db: db))
        }
        // A default zone exists for everyone before anything is saved in it (`zoneRow`).
        guard read.zone != nil || zoneID.isDefaultZone else {
            throw Engine.ownZoneNotFound(zoneID, caller: try accountIdentity(id: callerID, db: db))
        }
        guard let row = read.record, let zoneRowID = read.zone else { throw ShareFlowError.unknown("record \(id) does not exist") }
        let zone = ZoneRow(id: zoneRowID, container: container, ownerID: ownerID, zoneID: zoneID, isPublic: isPublic)
        if row.type == Share.recordType { return try makeRecord(row, zone: zone, caller: try accountIdentity(id: callerID, db: db), db: db) }
        return try makeRecord(row, zone: zone, caller: named, db: db)
    }

    /// The record as `caller` may read it in `database`, or `unknownItem` (R12: a stranger
    /// learns nothing), in the transaction `db`: a read or a write's own.
    func record(_ id: RecordID, in database: CloudDatabase, caller: some CallerKey, db: StoreTransaction) throws -> Record {
        let zone = try self.zone(for: id.zoneID, in: database, caller: caller, db: db)
        guard let row = try recordRow(zone: zone, name: id.recordName, db: db) else {
            throw ShareFlowError.unknown("record \(id) does not exist")
        }
        if database.databaseScope == .shared {
            // R12: only while the caller's participation is accepted; a stranger learns nothing.
            guard
                let share = try shareCovering(
                    zone: zone,
                    recordName: row.type == Share.recordType ? nil : row.name,
                    shareRecordName: row.type == Share.recordType ? row.name : nil,
                    db: db
                ),
                let me = try participantRow(share: share.id, account: caller.id, db: db)
            else {
                throw ShareFlowError.unknown("record \(id) does not exist")
            }
            if case let .denied(_, reason) = SharingRules.decide(.readRecords, of: me, isPublicShare: share.publicPermission != .none) {
                // R12: the record is not in this caller's shared database.
                throw ShareFlowError.unknown("record \(id) is not in the shared database of \(caller.email ?? caller.userRecordID): \(reason)")
            }
        }
        return try makeRecord(row, zone: zone, caller: caller, db: db)
    }

    // MARK: Shares

    func shareRow(zone: ZoneRow, recordName: String, db: StoreTransaction) throws -> ShareRow? {
        try db.share(zone: zone.id, recordName: recordName)
    }

    /// What a URL names (R6, R44): its share's own token, and the one-time link it is, if any.
    struct ShareLink {
        let shareToken: String
        let oneTime: OneTimeLinkRow?
    }

    /// The share token a URL stands for: its own, or a one-time link's share's (R44). Every
    /// URL costs the same one seek for the link, whatever it names (R27).
    func shareLink(url: String, db: StoreTransaction) throws -> ShareLink? {
        guard let token = Engine.shareToken(url: url) else { return nil }
        if let link = try db.oneTimeLink(token: token) { return ShareLink(shareToken: link.shareToken, oneTime: link) }
        return ShareLink(shareToken: token, oneTime: nil)
    }

    /// The share at `url` in `environment` (R32: one of the other environment is not found).
    func shareRow(url: String, environment: CloudEnvironment, db: StoreTransaction) throws -> ShareRow? {
        guard let token = try shareLink(url: url, db: db)?.shareToken else { return nil }
        return try db.share(token: token, environment: environment)
    }

    /// `shareAndZone` with the share's own record, in one statement (for `makeShare`).
    func shareZoneAndRecord(
        url: String,
        environment: CloudEnvironment,
        db: StoreTransaction
    ) throws -> (row: ShareRow, zone: ZoneRow, record: RecordRow)? {
        guard let token = try shareLink(url: url, db: db)?.shareToken else { return nil }
        return try db.shareWithZoneAndRecord(token: token, environment: environment, publicOwnerName: Engine.publicOwnerName).map {
            ($0.share, $0.zone, $0.record)
        }
    }

    /// The share at `url` in `environment` with its zone, in one statement (R32 as `shareRow(url:)`).
    func shareAndZone(url: String, environment: CloudEnvironment, db: StoreTransaction) throws -> (row: ShareRow, zone: ZoneRow)? {
        guard let token = try shareLink(url: url, db: db)?.shareToken else { return nil }
        return try db.shareWithZone(token: token, environment: environment, publicOwnerName: Engine.publicOwnerName).map { ($0.share, $0.zone) }
    }

    func shareRow(rootName: String, zone: ZoneRow, db: StoreTransaction) throws -> ShareRow? {
        try db.share(zone: zone.id, rootName: rootName)
    }

    func zoneShareRow(zone: ZoneRow, db: StoreTransaction) throws -> ShareRow? { try db.zoneShare(zone: zone.id) }

    func zoneRow(id: Int64, db: StoreTransaction) throws -> ZoneRow {
        guard let zone = try db.zone(id: id, publicOwnerName: Engine.publicOwnerName) else {
            throw ShareFlowError.unknown("zone \(id) no longer exists")
        }
        return zone
    }

    /// The share that covers a record (R4): the zone's share, or the share rooted at the record
    /// or at one of its ancestors by `parent`. With `shareRecordName`, that share itself.
    func shareCovering(zone: ZoneRow, recordName: String?, shareRecordName: String? = nil, db: StoreTransaction) throws -> ShareRow? {
        if let shareRecordName { return try shareRow(zone: zone, recordName: shareRecordName, db: db) }
        if let zoneShare = try zoneShareRow(zone: zone, db: db) { return zoneShare }
        guard let recordName else { return nil }
        return try db.shareRooted(atOrAbove: recordName, zone: zone.id)
    }

    func participantRows(share: Int64, db: StoreTransaction) throws -> [ParticipantRow] { try db.participants(share: share) }

    func participantRow(share: Int64, account: Int64, db: StoreTransaction) throws -> ParticipantRow? {
        try db.participant(share: share, account: account)
    }

    /// The participant object of a stored row. `account`: what others see of its account when
    /// it was read with the row (`participantsWithAccounts`); otherwise it is read here.
    func participantObject(_ row: ParticipantRow, account: AccountIdentityRow? = nil, db: StoreTransaction) throws -> Participant {
        let identity: UserIdentity
        if row.oneTimeToken != nil, row.accountID == nil {
            // A one-time link's participant is nobody until the link is claimed (R44).
            identity = UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil, hasiCloudAccount: false)
        } else if let accountID = row.accountID {
            identity = try (account ?? accountIdentity(id: accountID, db: db)).identity(lookupInfo: row.lookup)
        } else {
            identity = UserIdentity(userRecordID: nil, lookupInfo: row.lookup, nameComponents: nil, hasiCloudAccount: false)
        }
        let participant = Participant(
            participantID: row.participantID,
            userIdentity: identity,
            role: row.role,
            permission: row.permission,
            acceptanceStatus: row.status
        )
        participant.isApprovedRequester = row.isApprovedRequester
        participant.dateAddedToShare = Date(timeIntervalSince1970: row.addedAt)
        participant.isOneTimeURLParticipant = row.oneTimeToken != nil
        return participant
    }

    /// The share as `caller` sees it (R15: the owner and the caller at least). `participants`:
    /// the share's, with their accounts, when the caller read them already in this transaction.
    /// `record`: the share's record as read with it (`shareZoneAndRecord`), else read here.
    func makeShare(
        _ row: ShareRow,
        zone: ZoneRow,
        caller: some CallerKey,
        participants: [ParticipantWithAccount]? = nil,
        record known: RecordRow? = nil,
        db: StoreTransaction
    ) throws -> Share {
        let record = try known ?? recordRow(zone: zone, name: row.recordName, db: db)
        let share = Share(
            recordID: RecordID(recordName: row.recordName, zoneID: zone.zoneID),
            rootRecordID: row.rootName.map { RecordID(recordName: $0, zoneID: zone.zoneID) }
        )
        share.fields = record?.fields ?? [:]
        share.recordChangeTag = record?.tag
        share.serverFields = share.fields
        if let record { Engine.stampMetadata(record, on: share) }
        share.url = shareURL(token: row.token)
        share.shortGUID = row.token
        share.publicPermission = row.publicPermission
        share.serverPublicPermission = row.publicPermission
        share.allowsAccessRequests = row.allowsAccessRequests
        share.serverAllowsAccessRequests = row.allowsAccessRequests
        // One statement for every participant and its account, not four per participant.
        let rows = try participants ?? db.participantsWithAccounts(share: row.id)
        let mine = rows.first { $0.row.accountID == caller.id }?.row
        let managing = mine.map { $0.role == .owner || ($0.role == .administrator && $0.status == .accepted) } ?? false
        for entry in rows {
            let p = entry.row
            let isMe = p.accountID == caller.id
            let visible =
                isMe || p.role == .owner
                || (p.status != .removed && (managing || (p.status == .accepted && row.publicPermission == .none && mine?.status == .accepted)))
            guard visible else { continue }
            let object = try participantObject(p, account: entry.account, db: db)
            // R44: the link is the owner's and administrators' to hand out, and its claimer's.
            if let token = p.oneTimeToken, managing || isMe { object.oneTimeURL = shareURL(token: token) }
            share.participants.append(object)
            if isMe { share.currentUserParticipant = object }
        }
        // R40: requesters and blocked identities, to the owner and administrators only.
        if managing {
            share.requesters = try db.accessRequests(share: row.id).map(Engine.accessRequester)
            share.blockedIdentities = try db.blockedIdentities(share: row.id).map(Engine.blockedIdentity)
        }
        return share
    }

    /// The owner's account of a share's zone.
    func owner(of zone: ZoneRow, db: StoreTransaction) throws -> Account { try loadAccount(id: zone.ownerID, db: db) }

    /// What others see of the owner of a share's zone (one statement; no contacts).
    func ownerIdentity(of zone: ZoneRow, db: StoreTransaction) throws -> AccountIdentityRow { try accountIdentity(id: zone.ownerID, db: db) }
}

extension Engine {
    func deleteZone(_ zoneID: RecordZoneID, in database: CloudDatabase) throws {
        try Engine.requireSignedIn(database)
        if database.databaseScope == .shared { return try leaveZone(zoneID, in: database) }
        guard database.databaseScope == .private else {
            throw ShareFlowError(.badDatabase, "zones can be deleted only in the private and shared databases")
        }
        guard !zoneID.isDefaultZone else { throw ShareFlowError.invalid("the default zone cannot be deleted") }
        try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zone = try self.zone(for: zoneID, in: database, caller: caller, db: db)
            for share in try db.shares(zone: zone.id) {
                try deleteRecord(RecordID(recordName: share.recordName, zoneID: zoneID), in: database, caller: caller, db: db)
            }
            try db.deleteZone(id: zone.id)
            // One event for the zone, not one per record in it (SPEC §6).
            emitZoneEvent(.zoneDeleted, zoneID, database: database, caller: caller)
        }
    }

    /// A zone deleted from the shared database, as CloudKit does it: the caller leaves every
    /// share of it they are on (R14, as deleting each share there would), so the zone leaves
    /// their shared database; the owner's zone and its records stay, for everyone else.
    private func leaveZone(_ zoneID: RecordZoneID, in database: CloudDatabase) throws {
        try transaction { db in
            let caller = try loadAccount(id: database.container.session.accountID, db: db)
            let zone = try self.zone(for: zoneID, in: database, caller: caller, db: db)
            var left = 0
            for share in try db.shares(zone: zone.id) {
                guard let me = try participantRow(share: share.id, account: caller.id, db: db), me.status != .removed, me.role != .owner else {
                    continue
                }
                try deleteRecord(RecordID(recordName: share.recordName, zoneID: zoneID), in: database, caller: caller, db: db)
                left += 1
            }
            // On no share of it: as a zone the caller does not have (R37).
            guard left > 0 else { throw ShareFlowError(.zoneNotFound, "zone \(zoneID) does not exist in the shared database") }
        }
    }

    /// `zone.saved` (made) or `zone.deleted` (SPEC §6), after commit.
    func emitZoneEvent(_ kind: EventKind, _ zoneID: RecordZoneID, database: CloudDatabase, caller: Account) {
        guard events.hasObservers(kind) else { return }
        var event = Event(kind, caller: caller, container: database.container.containerIdentifier)
        event.zoneID = zoneID
        event.database = database.databaseScope.rawValue
        emit(event)
    }
}

extension CloudDatabase {
    /// Deletes a custom zone with its records; its shares end for every participant. In the
    /// shared database, the caller leaves every share of the zone instead (R14): the zone
    /// leaves their shared database and stays the owner's.
    public func deleteZone(_ zoneID: RecordZoneID) throws {
        try enter(.modifyRecordZones(zone: zoneID.zoneName)) { try engine.deleteZone(zoneID, in: self) }
    }
}
