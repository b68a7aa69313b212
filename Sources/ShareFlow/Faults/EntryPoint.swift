/// A door a request comes into the engine through, as fault rules name it (SPEC §15): a
/// database's calls, a container's sharing and discovery calls, and the operations a
/// container's queue runs. Every public entry point passes its own to `Engine.enter` or
/// `Engine.open`, the one place a request's fault is decided and enforced; what rules match
/// (the operation's name, its items, a sent change token) is named here and nowhere else.
package enum EntryPoint {
    /// `saveZone`, `deleteZone`: the zone by name.
    case modifyRecordZones(zone: String)
    /// `fetchRecord`, `fetchRecords`: the records by ID.
    case fetchRecords([RecordID])
    /// `modifyRecords`, `modify`: what each save and delete names.
    case modifyRecords([FaultItem])
    /// A query (a first page, or one after a cursor or marker) in `zone` (nil: the default).
    case query(zone: RecordZoneID?, recordType: String)
    /// A zone's change feed.
    case recordZoneChanges(RecordZoneID)
    /// The database's feed of changed zones; `sentChangeToken`: a `changeTokenExpired` rule applies.
    case databaseChanges(sentChangeToken: Bool)
    /// A container's sharing or discovery call (participants, metadata, accept, discovery):
    /// reached inside a request an operation or the server opened, whose failure it takes;
    /// outside one it decides nothing of its own.
    case containerCall
    /// An operation a container's queue runs: its native name and items (the operation's
    /// own, `CloudOperation.entryPoint`).
    case operation(name: String, items: [FaultItem])

    /// The operation's name as rules match it; nil for a call that decides no request.
    var operation: String? {
        switch self {
        case .modifyRecordZones: "modifyRecordZones"
        case .fetchRecords: "fetchRecords"
        case .modifyRecords: "modifyRecords"
        case .query: "query"
        case .recordZoneChanges: "recordZoneChanges"
        case .databaseChanges: "databaseChanges"
        case .containerCall: nil
        case .operation(let name, _): name
        }
    }

    /// What rules match the request by.
    var items: [FaultItem] {
        switch self {
        case .modifyRecordZones(let zone): [FaultItem(zone: zone)]
        case .fetchRecords(let ids): ids.map { FaultItem($0) }
        case .modifyRecords(let items), .operation(_, let items): items
        case .query(let zone, let recordType): [FaultItem(zone: zone?.zoneName ?? RecordZoneID.defaultZoneName, recordType: recordType)]
        case .recordZoneChanges(let zone): [FaultItem(zone: zone.zoneName)]
        case .databaseChanges, .containerCall: []
        }
    }

    /// `modifyRecords`' request: each save by its ID and type, then each delete.
    static func modifyRecords(saving: [(id: RecordID, type: String)], deleting: [RecordID]) -> EntryPoint {
        .modifyRecords(saving.map { FaultItem($0.id, type: $0.type) } + deleting.map { FaultItem($0) })
    }

    /// `modify`'s request, named as `modifyRecords` names the same saves and deletes (a share
    /// by its record's ID and `cloudkit.share`).
    static func modify(_ changes: [RecordChange]) -> EntryPoint {
        var saving: [(id: RecordID, type: String)] = []
        var deleting: [RecordID] = []
        for change in changes {
            switch change {
            case .create(let r), .update(let r, _, _, _), .replace(let r, _, _): saving.append((r.recordID, r.recordType))
            case .share(let draft): saving.append((draft.recordID, Share.recordType))
            case .delete(let id, _): deleting.append(id)
            }
        }
        return .modifyRecords(saving: saving, deleting: deleting)
    }

    /// Whether the request sent a change token (`changeTokenExpired` applies only then).
    var sentChangeToken: Bool {
        if case .databaseChanges(let sent) = self { return sent }
        return false
    }
}

extension CloudDatabase {
    /// Runs `body` as the request `entry` names, come in through this database (`Engine.enter`).
    @inline(__always)
    func enter<T>(_ entry: @autoclosure () -> EntryPoint, _ body: () throws -> T) throws -> T {
        try engine.enter(entry(), container: container, database: databaseScope, body)
    }
}
