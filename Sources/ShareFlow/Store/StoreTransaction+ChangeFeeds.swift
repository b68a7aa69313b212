import Foundation
import GRDB

/// One entry of a zone's feed: a record changed (its latest position) or deleted.
package struct ZoneChangeRow<Made> {
    package let name: String
    package let type: String
    package let seq: Int64
    package let deleted: Bool
    /// What the caller made of the record as stored now, read with the entry (nil for a
    /// tombstone).
    package var record: Made?
}

/// One entry of a database feed: a zone changed (or made), or gone and why.
package struct FeedChangeRow {
    package let zoneName: String
    package let ownerName: String
    package let seq: Int64
    /// Nil for a zone changed; `deleted` or `purged` for one gone.
    package let deletedReason: String?
}

/// Reading the change log (`StoreTransaction+ChangeLog.swift` writes it).
extension StoreTransaction {
    /// The position of the zone feed's last entry, the owner's or `viewer`'s (0 for none).
    package func zoneFeedEnd(zone: Int64, viewer: Int64?) throws -> Int64 {
        if let viewer {
            return try fetchInteger("SELECT MAX(seq) FROM view_change WHERE zoneID = ? AND viewerID = ?", [zone, viewer]) ?? 0
        }
        // The owner's: the last record written, or the last tombstone.
        return try fetchInteger(
            """
            SELECT MAX(COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = ?1), 0), COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = ?1), 0))
            """,
            [zone]
        ) ?? 0
    }

    /// The zone's entries after position `seq`, oldest first, at most `limit`: the owner's
    /// (`viewer` nil) or what `viewer` sees of it; each live entry's record handed to `make`
    /// as it is read (no copy of the row kept between the read and what is made of it). One
    /// statement a page, not one per record: a first sync reads the whole zone. The joins are
    /// flat: a parenthesised `LEFT JOIN (record … LEFT JOIN …)` is not flattened by SQLite,
    /// which then built the whole zone's records for every entry of the page.
    ///
    /// A first sync reads every record of a zone, so each lookup a record costs counts
    /// (SPEC §12, `sync_first_vs_sqlite`). The owner's entries are the records themselves, by
    /// their position index (schema v9). A viewer's come from their position index alone
    /// (schema v8 made it covering), each record by the row the entry names (by its name for
    /// an entry without one; the name and zone checked, so a row reused can never pass for the
    /// record; their `+` keeps the planner on the row, not the name index). Creators' and
    /// modifiers' userRecordIDs come from a lookup per account of the page rather than two
    /// joins a record, and the share rooted at a record is joined only in a zone where some
    /// share has a root. Each record's fields are checked and kept undecoded (`FieldsAsRead`)
    /// for `make`, which makes the `Record` that decodes them when they are first read:
    /// building them was half a first sync's time.
    package func zoneChangesWithRecords<Made>(
        zone: Int64,
        viewer: Int64?,
        after seq: Int64,
        limit: Int,
        make: (RecordRow) throws -> Made
    ) throws -> [ZoneChangeRow<Made>] {
        let log = viewer == nil ? "zone_change" : "view_change"
        let n = StoreTransaction.recordWithRootedShareColumnCount
        let rooted =
            try (fetchInteger("SELECT EXISTS (SELECT 1 FROM share WHERE zoneID = ? AND rootName IS NOT NULL)", [zone]).map { $0 != 0 } ?? true)
        // A page's records come from a few accounts: a short list, looked through.
        var names: [(account: Int64, name: String?)] = []
        func userRecordID(_ account: Int64?) throws -> String? {
            guard let account else { return nil }
            if let known = names.first(where: { $0.account == account }) { return known.name }
            let name = try fetchOne("SELECT id, userRecordID FROM account WHERE id = ?", [account], table: "account", keyAt: 0) {
                try $0.text(1, "userRecordID")
            }
            names.append((account, name))
            return name
        }
        let recordColumns = """
            r.id, r.name, r.type, r.fields, r.parentName, r.tag, r.modifiedAt, r.shortGUID, r.createdAt, r.createdBy, NULL, r.modifiedBy, NULL,
            \(rooted ? StoreTransaction.rootedShareColumns : "NULL, NULL, NULL")
            """
        // The owner's feed (schema v9) is the zone's records in position order, merged with
        // its tombstones: each part walks its position index, and SQLite merges the two in
        // order, stopping at the page's end. A tombstone whose name was made again since is
        // not sent: the record is, at its later position.
        let sql =
            viewer == nil
            ? """
            SELECT \(recordColumns), r.name, r.type, r.seq, 0 FROM record r \(rooted ? StoreTransaction.rootedShareSource : "")
            WHERE r.zoneID = ?1 AND r.seq > ?3
            UNION ALL
            SELECT \(Array(repeating: "NULL", count: n).joined(separator: ", ")), l.name, l.type, l.seq, 1 FROM zone_change l
            WHERE l.zoneID = ?1 AND CAST(?2 AS BIGINT) IS NULL AND l.seq > ?3 AND l.deleted = 1 AND NOT EXISTS (SELECT 1 FROM record x WHERE x.zoneID = ?1 AND x.name = l.name)
            ORDER BY \(n + 3) LIMIT ?4
            """
            : """
            SELECT \(recordColumns), l.name, l.type, l.seq, l.deleted
            FROM view_change l LEFT JOIN record r ON l.deleted = 0
                AND r.id = COALESCE(l.recordID, (SELECT id FROM record WHERE zoneID = l.zoneID AND name = l.name)) AND +r.zoneID = l.zoneID AND +r.name = l.name
              \(rooted ? StoreTransaction.rootedShareSource : "")
            WHERE l.zoneID = ?1 AND l.viewerID = ?2 AND l.seq > ?3 ORDER BY l.seq LIMIT ?4
            """
        return try fetchAll(sql, [zone, viewer, seq, limit], table: log, keyAt: n + 2) { row in
            let entry = row.of(log, keyAt: n + 2)
            let seq = try entry.integer(n + 2, "seq")
            let deleted = try entry.integer(n + 3, "deleted") != 0
            guard try entry.optionalInteger(0, "id") != nil else {
                let name = try entry.text(n, "name")
                // A live entry whose row is not its record (rewritten or reused by another
                // program) is read by name: the row is a shortcut, never the truth, and an
                // entry without its record would be sent as a deletion.
                if !deleted, let byName = try record(zone: zone, name: name) {
                    return ZoneChangeRow(name: byName.name, type: byName.type, seq: seq, deleted: false, record: try make(byName))
                }
                return ZoneChangeRow(name: name, type: try entry.text(n + 1, "type"), seq: seq, deleted: deleted, record: nil)
            }
            var read = try StoreTransaction.recordRowWithRootedShare(row.of("record", keyAt: 0), lazyFields: true)
            read.creatorName = try userRecordID(read.createdBy)
            read.modifierName = try userRecordID(try row.of("record", keyAt: 0).optionalInteger(11, "modifiedBy"))
            // The entry's name and type are the record's (the join matched on the name).
            let (name, type) = (read.name, read.type)
            return ZoneChangeRow(name: name, type: type, seq: seq, deleted: deleted, record: try make(read))
        }
    }

    /// The zone's last position handed out, and the position before which its log was pruned.
    package func zoneLogBounds(zone: Int64) throws -> (current: Int64, keptFrom: Int64)? {
        // Inside a write, the positions it took and has not yet stored count.
        try fetchOne("SELECT id, changeSeq, keptFrom FROM zone WHERE id = ?", [zone], table: "zone", keyAt: 0) {
            (try lastSeq(zone: zone) ?? $0.integer(1, "changeSeq"), try $0.integer(2, "keptFrom"))
        }
    }

    /// The zone row `id`'s name, if it still exists (a token names its zone by row).
    package func zoneName(id: Int64) throws -> String? {
        try fetchOne("SELECT id, name FROM zone WHERE id = ?", [id], table: "zone", keyAt: 0) { try $0.text(1, "name") }
    }

    /// `account`'s database feed for a container, environment and scope (`private`, `shared`):
    /// its row, last position and pruned-before position; nil before anything was logged there.
    package func feed(account: Int64, container: ContainerID, scope: String) throws -> (id: Int64, current: Int64, keptFrom: Int64)? {
        // Inside a write, its own moves first.
        if isWritable { try writeFeedMoves(early: true) }
        return try fetchOne(
            "SELECT id, seq, keptFrom FROM feed WHERE accountID = ? AND container = ? AND environment = ? AND scope = ?",
            [account, container.identifier, container.environment.rawValue, scope],
            table: "feed",
            keyAt: 0
        ) {
            (try $0.integer(0, "id"), try $0.integer(1, "seq"), try $0.integer(2, "keptFrom"))
        }
    }

    /// The feed's entries after position `seq`, oldest first, at most `limit`.
    package func feedChanges(feed: Int64, after seq: Int64, limit: Int) throws -> [FeedChangeRow] {
        if isWritable { try writeFeedMoves(early: true) }
        return try fetchAll(
            """
            SELECT zoneName, ownerName, seq, deleted, reason FROM feed_change WHERE feedID = ? AND seq > ? ORDER BY seq LIMIT ?
            """,
            [feed, seq, limit],
            table: "feed_change",
            keyAt: 0,
            StoreTransaction.feedChangeRow
        )
    }

    /// A feed entry as stored (zoneName, ownerName, seq, deleted, reason).
    static func feedChangeRow(_ row: StoredRow) throws -> FeedChangeRow {
        FeedChangeRow(
            zoneName: try row.text(0, "zoneName"),
            ownerName: try row.text(1, "ownerName"),
            seq: try row.integer(2, "seq"),
            deletedReason: try row.integer(3, "deleted") != 0 ? (try row.optionalText(4, "reason") ?? "deleted") : nil
        )
    }

    /// The feed's entry at position `seq`, if one is there (a token's own position: the entry
    /// a write may have left in place, `StoreTransaction.write(_:)` of a feed move).
    package func feedChange(feed: Int64, at seq: Int64) throws -> FeedChangeRow? {
        if isWritable { try writeFeedMoves(early: true) }
        return try fetchAll(
            "SELECT zoneName, ownerName, seq, deleted, reason FROM feed_change WHERE feedID = ? AND seq = ?",
            [feed, seq],
            table: "feed_change",
            keyAt: 0,
            StoreTransaction.feedChangeRow
        ).first
    }

    /// Where the zone a feed's entry names stands for the feed's account: the owner's zone feed
    /// end in a private database feed, the account's view of it in a shared one (the position
    /// of their feed's last entry; 0 for a zone gone). Each change a feed reports moves it, so
    /// a database token keeps it for the entry it points at: a later change of that zone,
    /// which leaves a feed's last entry in place, shows as a position past the token's.
    package func feedZonePosition(feed: Int64, zoneName: String, ownerName: String) throws -> Int64 {
        try fetchInteger(
            """
            SELECT CASE WHEN f.scope = 'private'
                THEN MAX(COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = z.id), 0), COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = z.id), 0))
                ELSE COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = z.id AND viewerID = f.accountID), 0) END
            FROM feed f CROSS JOIN account a ON a.userRecordID = ?2 CROSS JOIN zone z ON z.container = f.container
                AND z.environment = f.environment AND z.scope = 'private' AND z.ownerID = a.id AND z.name = ?3
            WHERE f.id = ?1
            """,
            [feed, ownerName, zoneName]
        ) ?? 0
    }

    /// The key change tokens are signed with, made with the log (schema v7): one per store,
    /// so every process (and every node of one database) gives the same token for a position.
    package func changeTokenKey() throws -> [UInt8] {
        let hex = try fetchOne("SELECT key, value FROM shareflow_meta WHERE key = 'syncKey'", [], table: "shareflow_meta", keyAt: 0) {
            try $0.text(1, "value")
        }
        guard let hex, let key = StoreTransaction.bytes(hex: hex), key.count == 32 else {
            throw DamagedRow(
                table: "shareflow_meta",
                row: "'syncKey'",
                column: "value",
                problem: "expected 64 hexadecimal digits (the change tokens' key)"
            )
            .shareFlowError(path: path)
        }
        return key
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[i]), let low = nibble(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    // MARK: Retention (S5)

    /// Drops tombstones logged before `cutoff` (seconds since 1970), from zone, view and
    /// database feeds, and moves each feed's kept-from position past what was dropped: a
    /// token from before it is `changeTokenExpired`. Returns how many entries went.
    package func pruneChangeLog(before cutoff: Double) throws -> Int {
        try run(
            """
            UPDATE zone SET keptFrom = MAX(keptFrom, COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = zone.id AND deleted = 1 AND at < ?1), 0),
                                                   COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = zone.id AND deleted = 1 AND at < ?1), 0))
            """,
            [cutoff]
        )
        try run(
            """
            UPDATE feed SET keptFrom = MAX(keptFrom, COALESCE((SELECT MAX(seq) FROM feed_change WHERE feedID = feed.id AND deleted = 1 AND at < ?1), 0))
            """,
            [cutoff]
        )
        var removed = 0
        for table in ["zone_change", "view_change", "feed_change"] {
            removed += try run("DELETE FROM \(table) WHERE deleted = 1 AND at < ?", [cutoff])
        }
        return removed
    }

    /// The log's size, for `store info`: entries and tombstones.
    package func changeLogSize() throws -> (entries: Int, tombstones: Int) {
        var entries = 0
        var tombstones = 0
        // The owner's entries are the records written at a position (schema v9).
        entries += try Int(fetchInteger("SELECT COUNT(*) FROM record WHERE seq > 0") ?? 0)
        for table in ["zone_change", "view_change", "feed_change"] {
            entries += try Int(fetchInteger("SELECT COUNT(*) FROM \(table)") ?? 0)
            tombstones += try Int(fetchInteger("SELECT COUNT(*) FROM \(table) WHERE deleted = 1") ?? 0)
        }
        return (entries, tombstones)
    }
}
