import Foundation
import GRDB

/// The change log (SPEC §14): what every feed reads, written in the transaction that makes the
/// change, by the store's own methods that change rows — so no path that writes a record, a
/// share or a participant can leave the feeds behind.
///
/// - `zone.changeSeq` is each zone's counter: a row updated in the writing transaction (once,
///   just before it commits), so positions are handed out in commit order with no gap (a
///   rolled-back transaction gives its numbers back), on SQLite as on a store where plain
///   sequences commit out of order.
/// - The owner's feed of a private zone is its records at their positions (`record.seq`, set
///   by the record's own INSERT or UPDATE: S2's latest change of each), and its tombstones in
///   `zone_change`: one row per record name deleted, at the position of its deletion (a name
///   made again is sent as its record, the tombstone passed over).
/// - `view_change` is what each participant (a viewer) sees of the zone in their shared
///   database (S3): a live row is a record they see now and were sent; a record leaving their
///   view becomes a tombstone, only for those who saw it.
/// - `feed` / `feed_change`: each account's database feed per container, environment and scope
///   (S4): a zone changed, made, or gone (`deleted`, `purged`), at its latest position.
///
/// Public zones have no feed (S2) and log nothing.
extension StoreTransaction {
    /// A participant row `p` that sees the share's records in their shared database, for
    /// anyone but the owner (who reads their private database): generated from
    /// `SharingRules.decide(.readRecords, …)` (R12, R37), so the log's "who sees which record"
    /// is the rule the engine enforces on every read, not a second statement of it. Today:
    /// `p.status IN ('accepted') AND (p.role = 'administrator' OR p.role = 'privateUser' OR
    /// p.role = 'publicUser') AND p.permission IN ('readOnly', 'readWrite')`.
    static let sees = visibility(SharingRules.self)

    /// The predicate for the cells (role, permission, status) `rules` lets read records: a
    /// product of three lists when the allowed cells form one (as R12 does), else the cells
    /// listed. The same whether the share is public or not (R12 does not ask), or it fails at once.
    static func visibility(_ rules: SharingRules.Type) -> String {
        var cells: [(ParticipantRole, ParticipantPermission, ParticipantAcceptanceStatus)] = []
        for role in ParticipantRole.allCases where role != .owner {
            for permission in ParticipantPermission.allCases {
                for status in ParticipantAcceptanceStatus.allCases {
                    let decide = { (isPublic: Bool) in
                        rules.decide(.readRecords, role: role, permission: permission, status: status, isPublicShare: isPublic).isAllowed
                    }
                    precondition(decide(false) == decide(true), "R12 asks whether a share is public: the change log's visibility must too")
                    if decide(false) { cells.append((role, permission, status)) }
                }
            }
        }
        guard !cells.isEmpty else { return "1 = 0" }
        func list(_ values: [String]) -> String { "(" + values.map { "'\($0)'" }.joined(separator: ", ") + ")" }
        /// `column` is one of `values`: an `IN` of up to two, which SQLite runs as comparisons;
        /// more as comparisons written out, for an `IN` of three or more constants on a column
        /// no index holds has SQLite build a temporary table of them each time a statement
        /// runs (issue 48, callgrind: about 30,000 instructions each, twice in a save's read of
        /// its zone, four times in an accept's log).
        func among(_ column: String, _ values: [String]) -> String {
            values.count <= 2 ? "\(column) IN \(list(values))" : "(" + values.map { "\(column) = '\($0)'" }.joined(separator: " OR ") + ")"
        }
        let roles = Array(Set(cells.map(\.0.rawValue))).sorted()
        let permissions = Array(Set(cells.map(\.1.rawValue))).sorted()
        let statuses = Array(Set(cells.map(\.2.rawValue))).sorted()
        if roles.count * permissions.count * statuses.count == cells.count {
            return "\(among("p.status", statuses)) AND \(among("p.role", roles)) AND \(among("p.permission", permissions))"
        }
        return "(p.role, p.permission, p.status) IN ("
            + cells.map { "('\($0.0.rawValue)', '\($0.1.rawValue)', '\($0.2.rawValue)')" }.joined(separator: ", ") + ")"
    }

    /// A zone as the log needs it.
    struct LoggedZone {
        let id: Int64
        let container: String
        let environment: String
        let ownerID: Int64
        let name: String
        let ownerName: String
    }

    static let loggedZoneColumns = "z.id, z.container, z.environment, z.ownerID, z.name, a.userRecordID"

    static func loggedZone(_ row: StoredRow, at o: Int) throws -> LoggedZone {
        let zone = row.of("zone", keyAt: o)
        return LoggedZone(
            id: try zone.integer(o, "id"),
            container: try zone.text(o + 1, "container"),
            environment: try zone.text(o + 2, "environment"),
            ownerID: try zone.integer(o + 3, "ownerID"),
            name: try zone.text(o + 4, "name"),
            ownerName: try zone.of("account", keyAt: o + 3).text(o + 5, "userRecordID")
        )
    }

    /// The private zone `id` (nil for a public zone or none).
    func loggedZone(_ id: Int64) throws -> LoggedZone? {
        try fetchOne(
            """
            SELECT \(StoreTransaction.loggedZoneColumns) FROM zone z JOIN account a ON a.id = z.ownerID WHERE z.id = ? AND z.scope = 'private'
            """,
            [id],
            table: "zone",
            keyAt: 0
        ) { try StoreTransaction.loggedZone($0, at: 0) }
    }

    /// Forgets the zones read for record saves (`FeedBumps.zones`): a share, a participant or
    /// a viewer's rows changed, and a zone no one viewed may now be viewed.
    func forgetLoggedZones() {
        feedBumps?.zones.removeAll()
        feedBumps?.flatViewers.removeAll()
    }

    /// Takes `count` positions of the zone: returns the one before the first (the first is
    /// that plus 1); none for 0.
    ///
    /// In a store transaction (`feedBumps`), the counter is read once and written once, just
    /// before commit (`writeLogPositions`): a batch of saves takes its positions in memory.
    /// Elsewhere (a migration, seeding) the row is moved at once.
    func takeSeqs(_ count: Int, zone: Int64) throws -> Int64 {
        guard count > 0 else { return 0 }
        if let feedBumps {
            let last = try feedBumps.seqs[zone]?.last ?? storedSeq(zone)
            if feedBumps.seqs[zone] == nil { feedBumps.seqs[zone] = (last, last) }
            feedBumps.seqs[zone]!.last = last + Int64(count)
            return last
        }
        // An UPDATE, then a SELECT: `RETURNING` builds a temporary table for its row, which
        // cost a save more than both statements together.
        try run("UPDATE zone SET changeSeq = changeSeq + ? WHERE id = ?", [count, zone])
        return try storedSeq(zone) - Int64(count)
    }

    /// The zone's next position.
    private func nextSeq(_ zone: Int64) throws -> Int64 {
        try takeSeqs(1, zone: zone) + 1
    }

    /// The zone's counter as its row holds it (0 for no zone).
    private func storedSeq(_ zone: Int64) throws -> Int64 {
        try fetchInteger("SELECT changeSeq FROM zone WHERE id = ?", [zone]) ?? 0
    }

    /// The zone's last position handed out: this transaction's, if it took any.
    func lastSeq(zone: Int64) -> Int64? {
        feedBumps?.seqs[zone]?.last
    }

    /// Writes the counters this transaction moved into their zones' rows: run by the store
    /// just before it commits (a zone deleted since is no row, and is left).
    func writeLogPositions() throws {
        guard let feedBumps else { return }
        // The viewers of zones whose hierarchy moved, once each (they take positions too).
        while let (id, time) = feedBumps.zonesToRelog.first {
            feedBumps.zonesToRelog[id] = nil
            forgetLoggedZones()
            if let zone = try loggedZone(id) { try relogViewers(zone: zone, at: time) }
        }
        for (zone, seqs) in feedBumps.seqs where seqs.last != seqs.stored {
            try run("UPDATE zone SET changeSeq = ? WHERE id = ?", [seqs.last, zone])
            feedBumps.seqs[zone]!.stored = seqs.last
        }
        try writeFeedMoves()
    }

    /// False in a bench's baseline store (`Store.logsChanges`); every other transaction logs.
    var logs: Bool { feedBumps?.logging ?? true }

    // MARK: Records

    /// The private zone `id` as a record save logs it, and whether anyone views it: read once
    /// a transaction (`FeedBumps.zones`), in one statement with its counter, whether some
    /// share in it has a root and the zone share's viewers (`FeedBumps.flatViewers`); nil for
    /// a public zone, which logs nothing.
    func zoneForRecordLog(_ id: Int64) throws -> (zone: LoggedZone, viewed: Bool)? {
        // Read earlier in this transaction, and nothing since could make it viewed.
        if let known = feedBumps?.zones[id] { return known }
        // The zone's row first (kind 0), then one row (kind 1) per viewer of a share without a
        // root: one statement where a save in a shared zone ran three (the zone, whether some
        // share has a root, the zone share's viewers), each paying a statement's fixed cost.
        // The last zone column: whether a subscription may fire for the zone's changes (SPEC
        // §20, `notifyWatched`), in the same statement, so a save pays no more for it.
        var found: (zone: LoggedZone, seq: Int64, viewed: Bool, watched: Bool, rooted: Bool)?
        var flat: [Int64] = []
        try forEach(
            """
            SELECT 0, id, container, environment, ownerID, name, (SELECT userRecordID FROM account WHERE id = zone.ownerID), changeSeq,
                EXISTS (SELECT 1 FROM share s CROSS JOIN participant p ON p.shareID = s.id WHERE s.zoneID = ?1 AND \(StoreTransaction.sees))
                OR EXISTS (SELECT 1 FROM view_change WHERE zoneID = ?1 AND deleted = 0),
                EXISTS (SELECT 1 FROM subscription WHERE zoneID = ?1)
                OR EXISTS (SELECT 1 FROM subscription s WHERE s.container = zone.container AND s.environment = zone.environment
                           AND s.zoneID IS NULL AND (s.scope = 'shared' OR (s.scope = 'private' AND s.accountID = zone.ownerID))),
                EXISTS (SELECT 1 FROM share WHERE zoneID = ?1 AND rootName IS NOT NULL)
            FROM zone WHERE id = ?1 AND scope = 'private'
            UNION ALL
            SELECT 1, p.accountID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM share s CROSS JOIN participant p ON p.shareID = s.id
            WHERE s.zoneID = ?1 AND s.rootName IS NULL AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
            """,
            [id],
            table: "zone",
            keyAt: 1,
            { row -> Void in
                guard try row.integer(0, "kind") == 0 else {
                    flat.append(try row.of("participant", keyAt: 1).integer(1, "accountID"))
                    return
                }
                found = (
                    LoggedZone(
                        id: try row.integer(1, "id"),
                        container: try row.text(2, "container"),
                        environment: try row.text(3, "environment"),
                        ownerID: try row.integer(4, "ownerID"),
                        name: try row.text(5, "name"),
                        ownerName: try row.of("account", keyAt: 4).text(6, "userRecordID")
                    ),
                    try row.integer(7, "changeSeq"), try row.integer(8, "viewed") != 0, try row.integer(9, "watched") != 0,
                    try row.integer(10, "rooted") != 0
                )
            },
            { _ in true }
        )
        guard let (zone, seq, viewed, watched, rooted) = found else { return nil }
        if let feedBumps {
            feedBumps.watched[id] = watched
            feedBumps.zones[id] = (zone, viewed)
            if feedBumps.seqs[id] == nil { feedBumps.seqs[id] = (seq, seq) }
            // As `flatViewers` reads them: each once, in order; none where some share has a root.
            feedBumps.flatViewers[id] = FeedBumps.Viewers(viewers: rooted ? nil : Array(Set(flat)).sorted())
        }
        return (zone, viewed)
    }

    /// The position a record about to be written in zone `zone` takes in its owner's feed
    /// (its `seq`, schema v9: the owner's feed is the record table in position order, so the
    /// record's own INSERT or UPDATE logs it); nil in a public zone.
    func recordPosition(zone: Int64) throws -> Int64? {
        guard logs else { return nil }
        guard try zoneForRecordLog(zone) != nil else { return nil }
        return try nextSeq(zone)
    }

    /// Logs a record saved (made or changed) in zone `zone`, written at position `seq`
    /// (`recordPosition`): the owner's database feed, and each viewer who sees it now; a
    /// viewer who saw it and no longer does (it moved out of a shared hierarchy) gets a
    /// tombstone. A record whose move can change what others see (a new parent, a record
    /// others named as their parent: `hierarchyChanged`, asked only in a zone someone views)
    /// has every viewer of the zone looked at again.
    /// The viewers it was sent to (SPEC §20: who a subscription may tell of this change).
    @discardableResult
    func logRecordSaved(
        zone id: Int64,
        record: Int64,
        name: String,
        type: String,
        seq: Int64?,
        hierarchyChanged: () throws -> Bool,
        at time: Double,
        isNew: Bool = false
    ) throws -> [Int64] {
        guard let seq, let (zone, viewed) = try zoneForRecordLog(id) else { return [] }
        // A record's place in the zone changes what anyone sees only where someone views the
        // zone and some share in it has a root: a zone share covers every record alike.
        let moved = try viewed && flatViewers(zone: id) == nil ? hierarchyChanged() : false
        return try logRecordSaved(
            zone: zone,
            record: record,
            name: name,
            type: type,
            hierarchyChanged: moved,
            at: time,
            seq: seq,
            viewed: viewed,
            isNew: isNew
        )
    }

    /// `record`: its row, which viewers' entries keep beside the name (schema v8) so that a
    /// feed page reads each record by its row, not through the name index; `seq`: the
    /// position its row was written at (nil: take one and move the row there, the owner's
    /// entry); `viewed`: false when no participant views the zone (nothing to log for
    /// viewers); `isNew`: the record was just made, so no viewer holds a live row of it (a
    /// deleted one's rows were all made tombstones).
    ///
    /// `sentTo`: a viewer this transaction already logged the record for (nothing more to
    /// send them); `viewersSettled`: no viewer's access to it changed but those already looked
    /// at again, so none holding it needs looking at.
    @discardableResult
    func logRecordSaved(
        zone: LoggedZone,
        record: Int64,
        name: String,
        type: String,
        hierarchyChanged: Bool,
        at time: Double,
        seq written: Int64? = nil,
        viewed: Bool = true,
        isNew: Bool = false,
        sentTo: Int64? = nil,
        viewersSettled: Bool = false,
        only: Set<Int64>? = nil,
        hasParent: Bool? = nil
    ) throws -> [Int64] {
        let id = zone.id
        let seq: Int64
        if let written {
            seq = written
        } else {
            seq = try nextSeq(id)
            try run("UPDATE record SET seq = ? WHERE id = ?", [seq, record])
        }
        try bumpFeed(account: zone.ownerID, zone: zone, scope: "private", deleted: false, at: time)
        guard viewed || hierarchyChanged else { return [] }
        let viewers =
            try only.map { only in try self.viewers(ofRecord: name, zone: id, hasParent: hasParent).filter(only.contains) }
            ?? self.viewers(ofRecord: name, zone: id, hasParent: hasParent)
        // A statement each, cached: statements over a bound JSON list (json_each) were
        // compiled again on every call, which cost more than the rows.
        for viewer in viewers where viewer != sentTo {
            try run(
                """
                INSERT INTO view_change (zoneID, viewerID, name, type, seq, deleted, at, recordID) VALUES (?, ?, ?, ?, ?, 0, ?, ?)
                ON CONFLICT (zoneID, viewerID, name) DO UPDATE SET type = excluded.type, seq = excluded.seq, deleted = 0, at = excluded.at,
                    recordID = excluded.recordID
                """,
                [id, viewer, name, type, seq, time, record]
            )
            try bumpFeed(account: viewer, zone: zone, scope: "shared", deleted: false, at: time)
        }
        if hierarchyChanged {
            try relogViewersOnce(zone: zone, at: time)
        } else if !isNew && !viewersSettled {
            // A viewer who saw it and no longer may (a share ended in this transaction before it).
            for viewer in try liveViewers(ofRecord: name, zone: id) where !viewers.contains(viewer) {
                try relogViewer(viewer, zone: zone, at: time)
            }
        }
        return viewers
    }

    /// Logs record `name` deleted: a tombstone in the owner's feed and for every viewer who saw it.
    /// The position of the deletion and the viewers told of it; nil in a public zone or a
    /// store that logs nothing.
    @discardableResult
    func logRecordDeleted(zone id: Int64, name: String, type: String, at time: Double) throws -> (seq: Int64, viewers: [Int64])? {
        guard logs else { return nil }
        forgetLoggedZones()
        guard let zone = try loggedZone(id) else { return nil }
        let seq = try nextSeq(id)
        try run(
            """
            INSERT INTO zone_change (zoneID, name, type, seq, deleted, at) VALUES (?, ?, ?, ?, 1, ?)
            ON CONFLICT (zoneID, name) DO UPDATE SET type = excluded.type, seq = excluded.seq, deleted = 1, at = excluded.at
            """,
            [id, name, type, seq, time]
        )
        try bumpFeed(account: zone.ownerID, zone: zone, scope: "private", deleted: false, at: time)
        let viewers = try fetchAll(
            "UPDATE view_change SET seq = ?, deleted = 1, at = ? WHERE zoneID = ? AND name = ? AND deleted = 0 RETURNING viewerID",
            [seq, time, id, name],
            table: "view_change",
            keyAt: 0
        ) { try $0.integer(0, "viewerID") }
        for viewer in viewers { try bumpFeed(account: viewer, zone: zone, scope: "shared", deleted: false, at: time) }
        return (seq, viewers)
    }

    // Joins the planner could take either way are written CROSS JOIN, which SQLite takes in
    // the order written: from the few rows (a record's shares, a viewer's participant rows) to
    // their partners by index, never a scan of every participant (a store without ANALYZE
    // statistics gave the planner no reason to prefer one).

    /// The accounts that see record `name` now (R12, R37): the accepted participants, other
    /// than the owner, of the share saved as that record, of the hierarchy share at or above
    /// it, and of the zone's share. `hasParent`: whether the record has a parent, as the
    /// caller read it in this transaction (nil: read here).
    private func viewers(ofRecord name: String, zone: Int64, hasParent: Bool? = nil) throws -> [Int64] {
        if let flat = try flatViewers(zone: zone) { return flat }
        // A record with no parent (a root, a share's own record: what an accept logs) is
        // covered by a share rooted at it, the share it is, or a zone share: three lookups on
        // indexes, not the walk up (whose temporary tables cost more than the rest of an accept's log).
        if try !(hasParent ?? (parentName(zone: zone, name: name) != nil)) {
            return try fetchAll(
                """
                SELECT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
                WHERE s.zoneID = ?1 AND s.rootName = ?2 AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
                UNION SELECT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
                WHERE s.zoneID = ?1 AND s.rootName IS NULL AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
                UNION SELECT p.accountID FROM record r CROSS JOIN share s ON s.recordID = r.id CROSS JOIN participant p ON p.shareID = s.id
                WHERE r.zoneID = ?1 AND r.name = ?2 AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
                ORDER BY 1
                """,
                [zone, name],
                table: "participant",
                keyAt: 0
            ) { try $0.integer(0, "accountID") }
        }
        return try fetchAll(
            """
            WITH RECURSIVE up(n, depth) AS (
                SELECT ?2 COLLATE "binary", 0
                UNION ALL SELECT r.parentName, up.depth + 1 FROM up CROSS JOIN record r ON r.zoneID = ?1 AND r.name = up.n
                WHERE r.parentName IS NOT NULL AND up.depth < ?3),
            covering(id) AS (
                SELECT s.id FROM up CROSS JOIN share s ON s.zoneID = ?1 AND s.rootName = up.n
                UNION SELECT s.id FROM share s WHERE s.zoneID = ?1 AND s.rootName IS NULL
                UNION SELECT s.id FROM record r CROSS JOIN share s ON s.recordID = r.id WHERE r.zoneID = ?1 AND r.name = ?2)
            SELECT DISTINCT p.accountID FROM covering c CROSS JOIN participant p ON p.shareID = c.id
            WHERE \(StoreTransaction.sees) AND p.accountID IS NOT NULL ORDER BY p.accountID
            """,
            [zone, name, StoreTransaction.maxChainWalk],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(0, "accountID") }
    }

    /// In a zone where no share has a root (most: none, or a zone share), every record's
    /// viewers: the zone share's, two statements on indexes rather than the walk up a
    /// record's parents (whose temporary tables cost a save in a shared zone more than its
    /// own writes), read once a transaction (`FeedBumps.flatViewers`). Nil where some share
    /// has a root: each record's viewers are then its own.
    private func flatViewers(zone: Int64) throws -> [Int64]? {
        if let known = feedBumps?.flatViewers[zone] { return known.viewers }
        let rooted =
            try (fetchInteger("SELECT EXISTS (SELECT 1 FROM share WHERE zoneID = ? AND rootName IS NOT NULL)", [zone]).map { $0 != 0 } ?? true)
        let viewers =
            rooted
            ? nil
            : try fetchAll(
                """
                SELECT DISTINCT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
                WHERE s.zoneID = ?1 AND s.rootName IS NULL AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL ORDER BY p.accountID
                """,
                [zone],
                table: "participant",
                keyAt: 0
            ) { try $0.integer(0, "accountID") }
        feedBumps?.flatViewers[zone] = FeedBumps.Viewers(viewers: viewers)
        return viewers
    }

    /// The viewers holding record `name` as a live row (they were sent it and saw no tombstone).
    private func liveViewers(ofRecord name: String, zone: Int64) throws -> [Int64] {
        try fetchAll(
            "SELECT viewerID FROM view_change WHERE zoneID = ? AND name = ? AND deleted = 0 ORDER BY viewerID",
            [zone, name],
            table: "view_change",
            keyAt: 0
        ) { try $0.integer(0, "viewerID") }
    }

    // MARK: Views

    /// Every viewer of the zone (a participant with an accepted share in it, or one holding
    /// live rows) looked at again.
    func relogViewers(zone: LoggedZone, at time: Double) throws {
        guard logs else { return }
        let viewers = try fetchAll(
            """
            SELECT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
            WHERE s.zoneID = ?1 AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
            UNION SELECT viewerID FROM view_change WHERE zoneID = ?1 AND deleted = 0
            """,
            [zone.id],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(0, "accountID") }
        for viewer in viewers { try relogViewer(viewer, zone: zone, at: time) }
    }

    /// Every viewer of the zone looked at again, once for the whole transaction: at its end
    /// (`FeedBumps.zonesToRelog`), or now outside one.
    func relogViewersOnce(zone: LoggedZone, at time: Double) throws {
        guard logs else { return }
        guard let feedBumps else { return try relogViewers(zone: zone, at: time) }
        feedBumps.zonesToRelog[zone.id] = max(time, feedBumps.zonesToRelog[zone.id] ?? time)
    }

    /// The share `share`'s participants (and whoever holds live rows of its zone) looked at
    /// again: after a share's participants, status or reach changed.
    func relogShare(_ share: Int64, at time: Double) throws {
        guard logs else { return }
        guard
            let zoneID = try fetchOne(
                "SELECT id, zoneID FROM share WHERE id = ?",
                [share],
                table: "share",
                keyAt: 0,
                { try $0.integer(1, "zoneID") }
            ),
            let zone = try loggedZone(zoneID)
        else { return }
        try relogViewers(zone: zone, at: time)
    }

    /// What `viewer` sees of the zone now against what they were sent: each record come into
    /// view is logged for them as changed, each gone out of it as a tombstone (S3); their
    /// shared database's feed shows the zone changed, or deleted once no accepted share of
    /// theirs is left in it (S4).
    ///
    /// `share`: only the records that share covers are looked at (one participant's change on
    /// one share): shares never overlap (R5), so the rest of the viewer's view is as it was,
    /// and an accept costs the share's records, not everything the viewer has in the zone.
    ///
    /// `known`: that share as the caller read it in this transaction with nothing changed
    /// since (`ViewedShare`), so it is not read again.
    ///
    /// Returns the names that came into the viewer's view (each logged for them now).
    @discardableResult
    func relogViewer(_ viewer: Int64, zone: LoggedZone, share: Int64? = nil, known: ViewedShare? = nil, at time: Double) throws -> Set<String> {
        guard logs else { return [] }
        forgetLoggedZones()
        // The shares looked at, and whether the viewer sees each (R12, R37).
        // Two statements, not one with an OR: each on its index (the share's row; the
        // viewer's participant rows), never a scan of the zone's shares.
        let read: (StoredRow) throws -> (root: String?, record: Int64, sees: Bool) = {
            (root: try $0.optionalText(1, "rootName"), record: try $0.integer(2, "recordID"), sees: try $0.integer(3, "sees") != 0)
        }
        let shares =
            share != nil
            ? try known.map { [(root: $0.root, record: $0.record, sees: $0.sees)] }
                ?? fetchAll(
                    """
                    SELECT s.id, s.rootName, s.recordID,
                           EXISTS (SELECT 1 FROM participant p WHERE p.shareID = s.id AND p.accountID = ?2 AND \(StoreTransaction.sees))
                    FROM share s WHERE s.id = ?3 AND s.zoneID = ?1
                    """,
                    [zone.id, viewer, share],
                    table: "share",
                    keyAt: 0,
                    read
                )
            : try fetchAll(
                """
                SELECT DISTINCT s.id, s.rootName, s.recordID, 1 FROM participant p CROSS JOIN share s ON s.id = p.shareID
                WHERE p.accountID = ?2 AND s.zoneID = ?1 AND \(StoreTransaction.sees)
                """,
                [zone.id, viewer],
                table: "share",
                keyAt: 0,
                read
            )
        /// Record `root` and the records below it (name, type, row), by the parent index.
        func subtree(_ root: String) throws -> [(String, String, Int64)] {
            try fetchAll(
                """
                WITH RECURSIVE down(name) AS (
                    SELECT ?2 COLLATE "binary"
                    UNION SELECT r.name FROM down CROSS JOIN record r ON r.zoneID = ?1 AND r.parentName = down.name)
                SELECT r.name, r.type, r.id FROM down CROSS JOIN record r ON r.zoneID = ?1 AND r.name = down.name
                """,
                [zone.id, root],
                table: "record",
                keyAt: 2
            ) { (try $0.text(0, "name"), try $0.text(1, "type"), try $0.integer(2, "id")) }
        }
        /// The records (name, type, row) the shares cover: each part on an index, the zone read
        /// whole only for a zone share.
        func covered(_ shares: [(root: String?, record: Int64, sees: Bool)]) throws -> [(String, String, Int64)] {
            if shares.contains(where: { $0.root == nil }) {
                return try fetchAll("SELECT name, type, id FROM record WHERE zoneID = ?", [zone.id], table: "record", keyAt: 2) {
                    (try $0.text(0, "name"), try $0.text(1, "type"), try $0.integer(2, "id"))
                }
            }
            var records: [(String, String, Int64)] = []
            for share in shares {
                if let root = share.root { records += try subtree(root) }
                records += try fetchAll("SELECT name, type, id FROM record WHERE id = ?", [share.record], table: "record", keyAt: 2) {
                    (try $0.text(0, "name"), try $0.text(1, "type"), try $0.integer(2, "id"))
                }
            }
            return records
        }
        let visible: [(String, String, Int64)]
        var live: [String: String] = [:]
        if share != nil, let one = shares.first, let root = one.root {
            // Within the one hierarchy share: what it covers (the root's subtree and the
            // share's own record), seen or not, each with the viewer's live row of that name if
            // any — one statement, by the parent and name indexes (a viewer may hold thousands
            // of rows in the zone; only these names are looked at). A root with no children
            // (most shares an accept logs) is read without the walk down.
            let liveRow = "LEFT JOIN view_change v ON v.zoneID = ?1 AND v.viewerID = ?4 AND v.name = r.name AND v.deleted = 0"
            let sql =
                try known?.rootHasChildren ?? hasChildren(zone: zone.id, name: root)
                ? """
                WITH RECURSIVE down(name) AS (
                    SELECT ?2 COLLATE "binary"
                    UNION SELECT r.name FROM down CROSS JOIN record r ON r.zoneID = ?1 AND r.parentName = down.name),
                reach(name) AS (SELECT name FROM down UNION SELECT name FROM record WHERE id = ?3)
                SELECT r.name, r.type, v.type, r.id FROM reach CROSS JOIN record r ON r.zoneID = ?1 AND r.name = reach.name \(liveRow)
                """
                : """
                SELECT r.name, r.type, v.type, r.id FROM record r \(liveRow) WHERE r.zoneID = ?1 AND r.name = ?2
                UNION ALL SELECT r.name, r.type, v.type, r.id FROM record r \(liveRow) WHERE r.id = ?3 AND r.name != ?2
                """
            let rows = try fetchAll(sql, [zone.id, root, one.record, viewer], table: "record", keyAt: 0) {
                (name: try $0.text(0, "name"), type: try $0.text(1, "type"), live: try $0.optionalText(2, "type"), id: try $0.integer(3, "id"))
            }
            visible = one.sees ? rows.map { ($0.name, $0.type, $0.id) } : []
            for row in rows { if let type = row.live { live[row.name] = type } }
        } else {
            // The whole zone: a zone share covers all of it, and without a share every live row counts.
            visible = share != nil && shares.first?.sees != true ? [] : try covered(shares)
            for (name, type) in try fetchAll(
                "SELECT name, type FROM view_change WHERE zoneID = ? AND viewerID = ? AND deleted = 0",
                [zone.id, viewer],
                table: "view_change",
                keyAt: 0,
                { (try $0.text(0, "name"), try $0.text(1, "type")) }
            ) {
                live[name] = type
            }
        }
        // Positions for every entry at once (one statement, not one per entry): the zone's
        // counter moved by their number, handed out in order.
        let entering = visible.filter { live.removeValue(forKey: $0.0) == nil }
        let leaving = live.keys.sorted()
        var seq = try takeSeqs(entering.count + leaving.count, zone: zone.id)
        for (name, type, record) in entering {
            seq += 1
            try run(
                """
                INSERT INTO view_change (zoneID, viewerID, name, type, seq, deleted, at, recordID) VALUES (?, ?, ?, ?, ?, 0, ?, ?)
                ON CONFLICT (zoneID, viewerID, name) DO UPDATE SET type = excluded.type, seq = excluded.seq, deleted = 0, at = excluded.at,
                    recordID = excluded.recordID
                """,
                [zone.id, viewer, name, type, seq, time, record]
            )
        }
        for name in leaving {
            seq += 1
            try run(
                "UPDATE view_change SET seq = ?, deleted = 1, at = ? WHERE zoneID = ? AND viewerID = ? AND name = ?",
                [seq, time, zone.id, viewer, name]
            )
        }
        let changed = !entering.isEmpty || !leaving.isEmpty
        // The share looked at is one they see (an accept): some share is left, unasked.
        let sharesLeft =
            try share != nil && shares.first?.sees == true
            || exists(
                """
                SELECT EXISTS (SELECT 1 FROM participant p CROSS JOIN share s ON s.id = p.shareID
                               WHERE s.zoneID = ? AND p.accountID = ? AND \(StoreTransaction.sees))
                """,
                [zone.id, viewer]
            )
        if !sharesLeft {
            // Gone from their shared database: said once, if it was ever there.
            try markFeedDeleted(account: viewer, zone: zone, scope: "shared", reason: "deleted", at: time)
        } else if changed {
            try bumpFeed(account: viewer, zone: zone, scope: "shared", deleted: false, at: time)
        }
        return Set(entering.map(\.0))
    }

    // MARK: Shares

    /// A share as `relogViewer` looks at it for one viewer, read with the participant row
    /// that changed (`logParticipantChanged`): one statement where an accept ran four (the
    /// participant, the share, its root's children, the zone's counter).
    struct ViewedShare {
        let root: String?
        let record: Int64
        /// Whether the viewer sees the share's records (R12, R37).
        let sees: Bool
        /// Whether the root has children (nil: no root).
        let rootHasChildren: Bool?
    }

    /// A share's own rows changed (made, its public permission, a participant): the share's
    /// record changed for everyone who sees it (its change tag is renewed, R21), and
    /// `participant`'s view, if one changed, is looked at again.
    func logShareChanged(_ share: Int64, participant account: Int64?) throws {
        guard logs else { return }
        forgetLoggedZones()
        guard let (zone, name, record) = try loggedShare(share) else { return }
        try logShareChanged(zone: zone, share: share, record: record, recordName: name, participant: account)
    }

    /// A private zone's share as the log writes it: its zone, its record's name and row. Nil
    /// for a share elsewhere (no feed follows it).
    private func loggedShare(_ share: Int64) throws -> (zone: LoggedZone, name: String, record: Int64)? {
        try fetchOne(
            """
            SELECT s.id, r.name, \(StoreTransaction.loggedZoneColumns), s.recordID FROM share s JOIN record r ON r.id = s.recordID
            JOIN zone z ON z.id = s.zoneID JOIN account a ON a.id = z.ownerID WHERE s.id = ? AND z.scope = 'private'
            """,
            [share],
            table: "share",
            keyAt: 0
        ) {
            (try StoreTransaction.loggedZone($0, at: 2), try $0.of("record", keyAt: 0).text(1, "name"), try $0.integer(8, "recordID"))
        }
    }

    private func logShareChanged(
        zone: LoggedZone,
        share: Int64,
        record: Int64,
        recordName: String,
        participant account: Int64?,
        known: ViewedShare? = nil,
        rooted: Bool? = nil,
        recordHasParent: Bool? = nil
    ) throws {
        let time = EngineClock.seconds
        guard let account, account != zone.ownerID else {
            try logRecordSaved(
                zone: zone,
                record: record,
                name: recordName,
                type: "cloudkit.share",
                hierarchyChanged: false,
                at: time,
                hasParent: recordHasParent
            )
            return
        }
        // The one viewer whose access changed is looked at again, and was just sent the share's
        // record if it came into view: the others' entries move, no one else's view changed.
        let entered = try relogViewer(account, zone: zone, share: share, known: known, at: time)
        // Whether some share in the zone has a root, as read with the participant: a view's
        // rows changed since, never a share (`flatViewers` reads the zone share's viewers
        // only where none has).
        if rooted == true, let feedBumps { feedBumps.flatViewers[zone.id] = FeedBumps.Viewers(viewers: nil) }
        try logRecordSaved(
            zone: zone,
            record: record,
            name: recordName,
            type: "cloudkit.share",
            hierarchyChanged: false,
            at: time,
            sentTo: entered.contains(recordName) ? account : nil,
            viewersSettled: true,
            hasParent: recordHasParent
        )
    }

    /// What only the owner and the share's accepted administrators see of it changed (its
    /// access requests and blocks, SPEC §17 R40, R43): the share's record is logged for them
    /// alone; no other viewer's feed learns of it.
    func logShareAccessChanged(_ share: Int64) throws {
        guard logs else { return }
        forgetLoggedZones()
        guard let (zone, name, record) = try loggedShare(share) else { return }
        let managers = try fetchAll(
            "SELECT id, accountID FROM participant WHERE shareID = ? AND role = 'administrator' AND status = 'accepted' AND accountID IS NOT NULL",
            [share],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(1, "accountID") }
        try logRecordSaved(
            zone: zone,
            record: record,
            name: name,
            type: "cloudkit.share",
            hierarchyChanged: false,
            at: EngineClock.seconds,
            viewersSettled: true,
            only: Set(managers)
        )
    }

    /// A participant's row changed (status, role, permission). One statement reads what
    /// the log needs of it (an accept's): the participant's share, its record and zone, the
    /// zone's counter, the share as the participant's account now sees it, whether its root
    /// has children and whether some share in the zone has a root.
    func logParticipantChanged(_ participant: Int64) throws {
        guard logs else { return }
        forgetLoggedZones()
        guard
            let (zone, share, name, record, account, seq, known, rooted, hasParent) = try fetchOne(
                """
                SELECT q.id, r.name, q.accountID, q.shareID, \(StoreTransaction.loggedZoneColumns), s.recordID, z.changeSeq, s.rootName,
                    EXISTS (SELECT 1 FROM participant p WHERE p.shareID = s.id AND p.accountID = q.accountID AND \(StoreTransaction.sees)),
                    s.rootName IS NOT NULL AND EXISTS (SELECT 1 FROM record c WHERE c.zoneID = s.zoneID AND c.parentName = s.rootName),
                    s.rootName IS NOT NULL OR EXISTS (SELECT 1 FROM share o WHERE o.zoneID = s.zoneID AND o.rootName IS NOT NULL),
                    r.parentName
                FROM participant q
                JOIN share s ON s.id = q.shareID JOIN record r ON r.id = s.recordID JOIN zone z ON z.id = s.zoneID JOIN account a ON a.id = z.ownerID
                WHERE q.id = ? AND z.scope = 'private'
                """,
                [participant],
                table: "participant",
                keyAt: 0,
                { row -> (LoggedZone, Int64, String, Int64, Int64?, Int64, ViewedShare, Bool, Bool) in
                    let share = row.of("share", keyAt: 3)
                    let root = try share.optionalText(12, "rootName")
                    return (
                        try StoreTransaction.loggedZone(row, at: 4), try row.integer(3, "shareID"), try row.of("record", keyAt: 0).text(1, "name"),
                        try share.integer(10, "recordID"), try row.optionalInteger(2, "accountID"),
                        try row.of("zone", keyAt: 4).integer(11, "changeSeq"),
                        ViewedShare(
                            root: root,
                            record: try share.integer(10, "recordID"),
                            sees: try row.integer(13, "sees") != 0,
                            rootHasChildren: root == nil ? nil : try row.integer(14, "rootHasChildren") != 0
                        ),
                        try row.integer(15, "rooted") != 0,
                        try row.of("record", keyAt: 0).optionalText(16, "parentName") != nil
                    )
                }
            )
        else { return }
        // The zone's counter, as `takeSeqs` would read it: the transaction holds the zone's lock.
        if let feedBumps, feedBumps.seqs[zone.id] == nil { feedBumps.seqs[zone.id] = (seq, seq) }
        try logShareChanged(
            zone: zone,
            share: share,
            record: record,
            recordName: name,
            participant: account,
            known: known,
            rooted: rooted,
            recordHasParent: hasParent
        )
    }

    // MARK: Zones

    /// A private zone made: it appears in its owner's feed.
    func logZoneSaved(zone id: Int64, at time: Double) throws {
        guard logs else { return }
        guard let zone = try loggedZone(id) else { return }
        try bumpFeed(account: zone.ownerID, zone: zone, scope: "private", deleted: false, at: time)
    }

    /// A private zone about to be deleted: gone from its owner's feed and from the shared
    /// database of everyone who had it. Its own log goes with it.
    func logZoneDeleted(zone id: Int64, at time: Double) throws {
        guard logs else { return }
        forgetLoggedZones()
        guard let zone = try loggedZone(id) else { return }
        try markFeedDeleted(account: zone.ownerID, zone: zone, scope: "private", reason: "deleted", at: time)
        let viewers = try fetchAll(
            """
            SELECT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
            WHERE s.zoneID = ?1 AND \(StoreTransaction.sees) AND p.accountID IS NOT NULL
            UNION SELECT viewerID FROM view_change WHERE zoneID = ?1
            """,
            [id],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(0, "accountID") }
        for viewer in viewers { try markFeedDeleted(account: viewer, zone: zone, scope: "shared", reason: "deleted", at: time) }
    }

    // MARK: Database feeds

    /// The zone changed in `account`'s feed for its container and environment in `scope` (the
    /// feed made on first use): at the feed's next position, taken when the transaction
    /// commits (`FeedBumps.FeedMove`).
    private func bumpFeed(account: Int64, zone: LoggedZone, scope: String, deleted: Bool, at time: Double) throws {
        let key = FeedBumps.Key(account: account, zone: zone.id, scope: scope)
        if let feedBumps {
            guard !feedBumps.done.contains(key) else { return }
            feedBumps.done.insert(key)
        }
        try move(account: account, zone: zone, scope: scope, goneBecause: nil, at: time)
    }

    /// The zone reported gone from the feed (`reason`: deleted, purged), if the feed has it live.
    private func markFeedDeleted(account: Int64, zone: LoggedZone, scope: String, reason: String, at time: Double) throws {
        feedBumps?.done.remove(FeedBumps.Key(account: account, zone: zone.id, scope: scope))
        try move(account: account, zone: zone, scope: scope, goneBecause: reason, at: time)
    }

    /// The zone moved to the end of `account`'s feed of `scope`: changed, or gone (`goneBecause`).
    private func move(account: Int64, zone: LoggedZone, scope: String, goneBecause: String?, at time: Double) throws {
        try move(
            FeedBumps.FeedMove(
                feed: .init(account: account, container: zone.container, environment: zone.environment, scope: scope),
                zone: zone,
                goneBecause: goneBecause,
                time: time
            )
        )
    }

    /// Queues `move` for the commit, or makes it now outside a store transaction.
    private func move(_ move: FeedBumps.FeedMove) throws {
        guard let feedBumps else { return try write(move) }
        feedBumps.feedMoves.append(move)
    }

    /// Writes the feed moves not written yet, feed by feed in one order
    /// (`FeedBumps.FeedMove`): run just before the transaction commits, and (`early`) before a
    /// database feed is read inside it.
    func writeFeedMoves(early: Bool = false) throws {
        guard let feedBumps, feedBumps.movesWritten < feedBumps.feedMoves.count else { return }
        if early { try mayWriteFeedMovesEarly() }
        let moves = feedBumps.feedMoves[feedBumps.movesWritten...]
        // Stable: each feed's moves keep their order.
        for move in moves.enumerated().sorted(by: { $0.element.feed == $1.element.feed ? $0.offset < $1.offset : $0.element.feed < $1.element.feed })
        {
            try write(move.element)
        }
        feedBumps.movesWritten = feedBumps.feedMoves.count
    }

    private func write(_ move: FeedBumps.FeedMove) throws {
        let feed = move.feed
        let zone = move.zone
        let names: StoreArguments = [feed.account, feed.container, feed.environment, feed.scope]
        guard let reason = move.goneBecause else {
            // Already the feed's last entry, and live: nothing to move. A reader whose token
            // is at that entry learns of this change from the zone's own position, which the
            // token keeps (`feedZonePosition`, `Engine.databaseChanges`); one before it reads
            // the entry anyway. Three pages and two statements fewer for every write after
            // the first in a zone, on SQLite, whose one writer at a time keeps this check and
            // the commit together; a driver's writers of other zones could move the feed
            // past the entry between them, so there the entry moves as before.
            if case .sqlite = connection,
                try exists(
                    """
                    SELECT EXISTS (SELECT 1 FROM feed f CROSS JOIN feed_change c ON c.feedID = f.id AND c.zoneName = ?5 AND c.ownerName = ?6
                                   WHERE f.accountID = ?1 AND f.container = ?2 AND f.environment = ?3 AND f.scope = ?4 AND c.seq = f.seq
                                   AND c.deleted = 0)
                    """,
                    [feed.account, feed.container, feed.environment, feed.scope, zone.name, zone.ownerName]
                )
            {
                return
            }
            // Moved, or made at 1 (an upsert only then: two writers of other zones may make an
            // account's feed at once, and the second moves what the first made); then the
            // zone's entry at the feed's new position, which the entry reads itself (scalar
            // subqueries on the feed's key, not `INSERT … SELECT`, which SQLite runs with a
            // statement journal). Not one upsert `RETURNING`: its temporary table cost more
            // than the statements.
            if try run("UPDATE feed SET seq = seq + 1 WHERE accountID = ? AND container = ? AND environment = ? AND scope = ?", names) == 0 {
                try run(
                    """
                    INSERT INTO feed (accountID, container, environment, scope, seq, keptFrom) VALUES (?, ?, ?, ?, 1, 0)
                    ON CONFLICT (accountID, container, environment, scope) DO UPDATE SET seq = feed.seq + 1
                    """,
                    names
                )
            }
            try run(
                """
                INSERT INTO feed_change (feedID, zoneName, ownerName, seq, deleted, reason, at) VALUES (
                    (SELECT id FROM feed WHERE accountID = ?1 AND container = ?2 AND environment = ?3 AND scope = ?4), ?5, ?6,
                    (SELECT seq FROM feed WHERE accountID = ?1 AND container = ?2 AND environment = ?3 AND scope = ?4), 0, NULL, ?7)
                ON CONFLICT (feedID, zoneName, ownerName) DO UPDATE SET seq = excluded.seq, deleted = 0, reason = NULL, at = excluded.at
                """,
                [feed.account, feed.container, feed.environment, feed.scope, zone.name, zone.ownerName, move.time]
            )
            return
        }
        guard let id = try fetchInteger("SELECT id FROM feed WHERE accountID = ? AND container = ? AND environment = ? AND scope = ?", names),
            try exists(
                "SELECT EXISTS (SELECT 1 FROM feed_change WHERE feedID = ? AND zoneName = ? AND ownerName = ? AND deleted = 0)",
                [id, zone.name, zone.ownerName]
            )
        else { return }
        try run("UPDATE feed SET seq = seq + 1 WHERE id = ?", [id])
        let seq = try fetchInteger("SELECT seq FROM feed WHERE id = ?", [id]) ?? 0
        try run(
            "UPDATE feed_change SET seq = ?, deleted = 1, reason = ?, at = ? WHERE feedID = ? AND zoneName = ? AND ownerName = ?",
            [seq, reason, move.time, id, zone.name, zone.ownerName]
        )
    }

    // MARK: Migration

    /// Logs a store's whole contents as its feeds' start (a store made before schema v7; run
    /// by migration v8, once the log's rows can name their records).
    ///
    /// Each record at a position after any the zone has handed out, over an entry it may
    /// already have: v7 and v8 commit one by one, and a store left between them (v7's
    /// `logPending` set) is a whole schema-7 store to a shareflow of that schema, which logs
    /// its saves there before v8 runs.
    func logExistingContents(at time: Double) throws {
        let zones = try fetchAll("SELECT id FROM zone WHERE scope = 'private' ORDER BY id", [], table: "zone", keyAt: 0) { try $0.integer(0, "id") }
        for id in zones {
            guard let zone = try loggedZone(id) else { continue }
            try bumpFeed(account: zone.ownerID, zone: zone, scope: "private", deleted: false, at: time)
            try run(
                """
                INSERT INTO zone_change (zoneID, name, type, seq, deleted, at, recordID)
                SELECT zoneID, name, type, (SELECT changeSeq FROM zone WHERE id = ?2) + ROW_NUMBER() OVER (ORDER BY id), 0, ?1, id
                FROM record WHERE zoneID = ?2
                ON CONFLICT (zoneID, name) DO UPDATE SET type = excluded.type, seq = excluded.seq, deleted = 0, at = excluded.at,
                    recordID = excluded.recordID
                """,
                [time, id]
            )
            try run("UPDATE zone SET changeSeq = changeSeq + (SELECT COUNT(*) FROM record WHERE zoneID = ?1) WHERE id = ?1", [id])
            try relogViewers(zone: zone, at: time)
        }
    }

}
