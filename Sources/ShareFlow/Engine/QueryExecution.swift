import Foundation

/// O7: running a query in one zone of a database, honouring R12 in the shared database.
extension Engine {
    struct QueryPage {
        var records: [Record]
        var cursor: QueryCursor?
    }

    func runQuery(
        _ query: Query,
        zoneID: RecordZoneID?,
        desiredKeys: [String]?,
        limit: Int?,
        after: QueryPosition?,
        maxBytes: Int? = nil,
        in database: CloudDatabase
    ) throws -> QueryPage {
        try Naming.check(recordType: query.recordType)
        for key in query.sortDescriptors.map(\.key) + query.predicate.keys where !Predicate.systemKeys.contains(key) {
            try Naming.check(fieldKey: key)
        }
        if let limit, limit < 1 { throw ShareFlowError.invalid("resultsLimit must be 1 or more, got \(limit) (O7)") }
        // Each sort key is compared for every pair the sort meets: a bound keeps a query's cost
        // in proportion to the records it reads.
        guard query.sortDescriptors.count <= Query.maxSortDescriptors else {
            throw ShareFlowError(.limitExceeded, "a query sorts by at most \(Query.maxSortDescriptors) keys, got \(query.sortDescriptors.count) (O7)")
        }
        if let after, after.values.count != query.sortDescriptors.count {
            throw ShareFlowError.invalid("this cursor is not one of this query's (O7)")
        }
        guard database.databaseScope != .shared || zoneID != nil else {
            throw ShareFlowError.invalid("a query in the shared database needs a zoneID: the zone of a share (O7)")
        }
        let target = zoneID ?? .default
        return try reading { db in
            let caller = try accountIdentity(id: database.container.session.accountID, db: db)
            let zone = try self.zone(for: target, in: database, caller: caller, db: db)
            var visible: (String) -> Bool = { _ in true }
            if database.databaseScope == .shared {
                visible = try namesVisibleInSharedDatabase(zone: zone, callerID: caller.id, db: db)
            }
            let sorts = query.sortDescriptors
            func position(_ row: RecordRow) -> QueryPosition {
                QueryPosition(values: sorts.map { Engine.sortValue($0, in: row) }, name: row.name)
            }
            let matches = query.predicate.comparingNames().compiled()
            // A bound on the time the query reads, checked every 256 records read.
            let deadline = options.queryTimeLimit.map { DispatchTime.now().uptimeNanoseconds + UInt64($0 * 1e9) }
            var read = 0
            func step() throws {
                read += 1
                guard let deadline, read & 255 == 0, DispatchTime.now().uptimeNanoseconds > deadline else { return }
                throw ShareFlowError(
                    .limitExceeded,
                    "the query of \(query.recordType) read \(read) records in \(options.queryTimeLimit!) s without filling its page; sort by modificationDate or recordName (read in order) or narrow it, and page with a smaller resultsLimit (O7)"
                )
            }
            var page: [RecordRow] = []
            var more = false
            var bytes = 0
            /// Whether `row` still fits the page's byte budget (the first always does).
            func fits(_ row: RecordRow) -> Bool {
                guard let maxBytes, !page.isEmpty else { return true }
                return bytes + row.storedBytes <= maxBytes
            }
            if let order = Engine.storeOrder(sorts), after.map({ Engine.storeKeyset($0, order) != nil }) ?? true {
                // SPEC §12: in an order the store keeps, the page is read from the first record
                // after the cursor and the scan stops once the page is full and one more matched.
                let limit = limit ?? Int.max
                try db.records(zone: zone.id, type: query.recordType, order: order, after: after.flatMap { Engine.storeKeyset($0, order) }) { row in
                    try step()
                    guard visible(row.name), matches({ key in Engine.value(of: key, in: row) }) else { return true }
                    guard page.count < limit, fits(row) else {
                        more = true
                        return false
                    }
                    page.append(row)
                    bytes += row.storedBytes
                    return true
                }
            } else {
                // R33: one total order (the sort keys, then the record name; records without a
                // key first), and a page starts strictly after the last record of the one before
                // (a keyset, not an offset): a record deleted or inserted in between hides or
                // repeats no other. With a page size, only the first `limit + 1` matches are kept
                // (sorted as they come): memory and sorting in proportion to the page, not the zone.
                let keep = limit.map { $0 + 1 } ?? Int.max
                var best: [(row: RecordRow, position: QueryPosition)] = []
                func before(_ a: QueryPosition, _ b: QueryPosition) -> Bool { QueryPosition.order(a, b, sorts) == .orderedAscending }
                try db.records(zone: zone.id, type: query.recordType) { row in
                    try step()
                    guard visible(row.name), matches({ key in Engine.value(of: key, in: row) }) else { return true }
                    let p = position(row)
                    if let after, QueryPosition.order(p, after, sorts) != .orderedDescending { return true }
                    if keep == Int.max {
                        best.append((row, p))
                        return true
                    }
                    if best.count == keep {
                        guard before(p, best[best.count - 1].position) else { return true }
                        best.removeLast()
                    }
                    var low = 0
                    var high = best.count
                    while low < high {
                        let mid = (low + high) / 2
                        if before(best[mid].position, p) { low = mid + 1 } else { high = mid }
                    }
                    best.insert((row, p), at: low)
                    return true
                }
                if keep == Int.max { best.sort { before($0.position, $1.position) } }
                for entry in best.prefix(limit ?? Int.max) {
                    guard fits(entry.row) else { break }
                    page.append(entry.row)
                    bytes += entry.row.storedBytes
                }
                more = page.count < best.count
            }
            let records = try page.map { try makeRecord($0, zone: zone, caller: caller, db: db).copy(keys: desiredKeys) }
            let cursor =
                more
                ? QueryCursor(
                    query: query,
                    zoneID: zoneID,
                    scope: database.databaseScope,
                    containerID: database.container.containerID,
                    after: position(page.last!)
                )
                : nil
            return QueryPage(records: records, cursor: cursor)
        }
    }

    /// The store's order for these sort descriptors, when it keeps one (R33's total order: no
    /// key or the record name, or the modification date, then the name); nil for any other.
    static func storeOrder(_ sorts: [SortDescriptor]) -> StoreTransaction.RecordOrder? {
        switch sorts.count {
        case 0: return .name(ascending: true)
        case 1 where sorts[0].relativeLocation == nil:
            switch sorts[0].key {
            case "recordName", "recordID": return .name(ascending: sorts[0].ascending)
            case "modificationDate": return .modification(ascending: sorts[0].ascending)
            default: return nil
            }
        default: return nil
        }
    }

    /// A cursor's position as the store's keyset for `order`, or nil when it holds no value
    /// the store can seek to (then the query takes the general path).
    static func storeKeyset(_ after: QueryPosition, _ order: StoreTransaction.RecordOrder) -> (modifiedAt: Double?, name: String)? {
        switch order {
        case .name: return (nil, after.name)
        case .modification:
            guard after.values.count == 1, case .date(let d)? = after.values[0] else { return nil }
            return (d.timeIntervalSince1970, after.name)
        }
    }

    /// What `sort` orders a record by: its key's value, or its distance in meters from the
    /// sort's location (nil without a location there).
    static func sortValue(_ sort: SortDescriptor, in row: RecordRow) -> FieldValue? {
        guard let center = sort.relativeLocation else { return value(of: sort.key, in: row) }
        guard case .location(let l)? = value(of: sort.key, in: row) else { return nil }
        return .double(Location.distance(l, center))
    }

    static func value(of key: String, in row: RecordRow) -> FieldValue? {
        switch key {
        case "recordName", "recordID": return .string(row.name)
        case "modificationDate": return .date(Date(timeIntervalSince1970: row.modifiedAt))
        case "creationDate": return .date(Date(timeIntervalSince1970: row.createdAt))
        case "creatorUserRecordID": return row.creatorName.map { .string($0) }
        case "lastModifiedUserRecordID": return row.modifierName.map { .string($0) }
        default: return row.fields[key]
        }
    }

    /// R12: which records of `zone` the caller sees in their shared database — those of the
    /// shares they may read (a zone share: all; a hierarchy share: its root and descendants).
    /// A record belongs to the share of its nearest shared ancestor (itself included), as a
    /// fetch decides; each name's answer is kept, so a page costs each record of the zone's
    /// parent map once at most, whatever the depth of its chains.
    private func namesVisibleInSharedDatabase(zone: ZoneRow, callerID: Int64, db: StoreTransaction) throws -> (String) -> Bool {
        var readable = Set<String>()
        var roots = Set<String>()
        for share in try db.shares(zone: zone.id) {
            let me = try participantRow(share: share.id, account: callerID, db: db)
            let allowed =
                me.map {
                    SharingRules.decide(.readRecords, of: $0, isPublicShare: share.publicPermission != .none).isAllowed
                } ?? false
            guard let root = share.rootName else {
                if allowed { return { _ in true } }
                continue
            }
            roots.insert(root)
            if allowed { readable.insert(root) }
        }
        guard !readable.isEmpty else { return { _ in false } }
        let parents = try db.parentNames(zone: zone.id)
        final class Memo { var known: [String: Bool] = [:] }
        let memo = Memo()
        return { name in
            var path: [String] = []
            var onPath = Set<String>()
            var current: String? = name
            var answer = false
            while let n = current {
                if let known = memo.known[n] {
                    answer = known
                    break
                }
                if roots.contains(n) {
                    answer = readable.contains(n)
                    path.append(n)
                    break
                }
                // A cycle another program left: the records on it are in no share.
                guard onPath.insert(n).inserted else { break }
                path.append(n)
                current = parents[n] ?? nil
            }
            for n in path { memo.known[n] = answer }
            return answer
        }
    }
}

extension Predicate {
    /// The keys the predicate names.
    var keys: [String] {
        switch self {
        case .all: return []
        case .and(let parts): return parts.flatMap(\.keys)
        case .not(let part): return part.keys
        case .compare(let key, _, _), .beginsWith(let key, _), .isIn(let key, _), .any(let key, _, _), .listContains(let key, _, _),
            .tokens(let key, _, _), .near(let key, _, _):
            return [key]
        }
    }
}

extension CloudDatabase {
    /// O7 in one call: the first `resultsLimit` matching records of the zone (the default zone
    /// when nil) and a cursor when there are more.
    ///
    /// ```swift
    /// let (trips, cursor) = try db.records(matching: Query(recordType: "Trip"), inZoneWith: zone.zoneID)
    /// ```
    public func records(
        matching query: Query,
        inZoneWith zoneID: RecordZoneID? = nil,
        desiredKeys: [String]? = nil,
        resultsLimit: Int? = nil
    ) throws -> (records: [Record], cursor: QueryCursor?) {
        let page = try enter(.query(zone: zoneID, recordType: query.recordType)) {
            try engine.runQuery(query, zoneID: zoneID, desiredKeys: desiredKeys, limit: resultsLimit, after: nil, in: self)
        }
        return (page.records, page.cursor)
    }

    /// O7 after `after` (a server's continuation marker, R33): the page and where the next one
    /// starts, or nil when this one is the last.
    /// With `maxBytes`, the page also ends before the record that would take the records' stored
    /// size past it (never before the first), so a page of big records is several pages.
    package func records(
        matching query: Query,
        inZoneWith zoneID: RecordZoneID?,
        desiredKeys: [String]?,
        resultsLimit: Int?,
        after: QueryPosition?,
        maxBytes: Int? = nil
    ) throws -> (records: [Record], next: QueryPosition?) {
        let page = try enter(.query(zone: zoneID, recordType: query.recordType)) {
            try engine.runQuery(query, zoneID: zoneID, desiredKeys: desiredKeys, limit: resultsLimit, after: after, maxBytes: maxBytes, in: self)
        }
        return (page.records, page.cursor?.after)
    }

    /// Where a zone-wide query's page ended: the zone it was reading, and where in it (nil:
    /// at its start).
    package struct ZoneWidePosition: Sendable, Equatable {
        package var zone: RecordZoneID
        package var position: QueryPosition?

        package init(zone: RecordZoneID, position: QueryPosition?) {
            self.zone = zone
            self.position = position
        }
    }

    /// O7 over every zone of the database the caller may read (CloudKit's `zoneWide`): their
    /// own zones in the private database, the zones of their accepted shares in the shared
    /// one (R12 in each), the default zone in the public one. Zones are read one after another
    /// in (owner, name) order, each in the query's order, and one position goes on across them.
    ///
    /// Bounded like a one-zone page: at most `resultsLimit` records and `maxBytes` of them,
    /// and once the query has read for `Engine.Options.queryTimeLimit` (1 s without one) it
    /// ends the page at the next zone, so a database of many empty zones is paged too.
    package func recordsInEveryZone(
        matching query: Query,
        desiredKeys: [String]?,
        resultsLimit: Int,
        after: ZoneWidePosition?,
        maxBytes: Int? = nil
    ) throws -> (records: [Record], next: ZoneWidePosition?) {
        func precedes(_ a: RecordZoneID, _ b: RecordZoneID) -> Bool { (a.ownerName, a.zoneName) < (b.ownerName, b.zoneName) }
        let zones = try fetchAllRecordZones().map(\.zoneID).sorted(by: precedes)
        var start = 0
        var position = after?.position
        if let after {
            // A zone deleted between two pages: go on with the zone after it.
            if let i = zones.firstIndex(of: after.zone) {
                start = i
            } else {
                start = zones.firstIndex { precedes(after.zone, $0) } ?? zones.count
                position = nil
            }
        }
        let seconds = engine.options.queryTimeLimit ?? 1
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        var records: [Record] = []
        var bytes = 0
        for i in start..<zones.count {
            if i > start, records.count >= resultsLimit || DispatchTime.now().uptimeNanoseconds > deadline || (maxBytes.map { bytes >= $0 } ?? false)
            {
                return (records, ZoneWidePosition(zone: zones[i], position: nil))
            }
            let page = try self.records(
                matching: query,
                inZoneWith: zones[i],
                desiredKeys: desiredKeys,
                resultsLimit: resultsLimit - records.count,
                after: position,
                maxBytes: maxBytes.map { max(1, $0 - bytes) }
            )
            position = nil
            records += page.records
            bytes += page.records.reduce(0) { $0 + $1.storedBytes }
            if let next = page.next { return (records, ZoneWidePosition(zone: zones[i], position: next)) }
        }
        return (records, nil)
    }

    /// Goes on from `cursor`, in the database and zone it came from.
    public func records(
        continuingMatchFrom cursor: QueryCursor,
        desiredKeys: [String]? = nil,
        resultsLimit: Int? = nil
    ) throws -> (records: [Record], cursor: QueryCursor?) {
        guard cursor.scope == databaseScope, cursor.containerID == container.containerID else {
            throw ShareFlowError.invalid("this cursor belongs to the \(cursor.scope.rawValue) database of \(cursor.containerID) (O7, R32)")
        }
        let page = try enter(.query(zone: cursor.zoneID, recordType: cursor.query.recordType)) {
            try engine.runQuery(cursor.query, zoneID: cursor.zoneID, desiredKeys: desiredKeys, limit: resultsLimit, after: cursor.after, in: self)
        }
        return (page.records, page.cursor)
    }
}
