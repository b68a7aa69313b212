import Foundation
import GRDB

/// What `shareflow store info` shows.
public struct StoreInfo: Sendable, Codable {
    /// The store, as `Store.path` names it.
    public let path: String
    /// The schema version the store records.
    public let schemaVersion: Int
    /// Bytes of the database file; on a driver's database, of the tables in ShareFlow's schema (indexes included).
    public let fileBytes: Int64
    /// Bytes of the SQLite write-ahead log not yet checkpointed; 0 in memory and on a driver's database.
    public let walBytes: Int64
    /// Rows by kind: accounts, zones, records, shares, participants.
    public let counts: [String: Int]
    /// The change log (SPEC §14): its entries, and how many of them are tombstones.
    public let changeLog: [String: Int]
}

/// What `shareflow store check` found: SQLite's integrity check and ShareFlow's invariants.
public struct StoreCheck: Sendable, Codable {
    /// SQLite's own verdict lines (`ok` when sound); always `ok` on a driver's database, which
    /// keeps its own pages whole.
    public let integrity: [String]
    /// One line per broken invariant, naming the rows.
    public let problems: [String]
    /// What the engine leaves on purpose and an operator may want to know, not damage: records
    /// whose parent was deleted (R34).
    public var notes: [String] = []
    /// Whether the store is sound: integrity `ok` and no problem; notes do not count.
    public var isHealthy: Bool { integrity == ["ok"] && problems.isEmpty }
}

extension Store {
    /// SPEC §20: subscriptions, device tokens, notifications queued and dropped, in `info`'s
    /// counts (a store older than schema 15 has none).
    static func countNotifications(_ tx: StoreTransaction, into counts: inout [String: Int]) throws {
        let n = try tx.notificationCounts()
        counts["subscriptions"] = n.subscriptions
        counts["deviceTokens"] = n.tokens
        counts["notificationsQueued"] = n.queued
        counts["notificationsDropped"] = n.dropped
    }

    /// Removes device tokens nobody polled for `idleDays` days (SPEC §20 N3), at most `limit`;
    /// how many (`store compact`, and `serve` hourly).
    @discardableResult
    public func pruneIdleDeviceTokens(idleDays: Double, limit: Int = 10_000) throws -> Int {
        let before = Date().timeIntervalSince1970 - idleDays * 86_400
        return try write(scope: .zones([])) { try $0.pruneDeviceTokens(idleSince: before, limit: limit) }
    }

    /// Path, schema version, size, rows by kind and the change log's size, read in one snapshot (`shareflow store info`).
    public func info() throws -> StoreInfo {
        if let driver {
            return try read { tx in
                var counts: [String: Int] = [:]
                for (kind, table) in [
                    ("accounts", "account"), ("zones", "zone"), ("records", "record"), ("shares", "share"), ("participants", "participant"),
                ] {
                    counts[kind] = Int(try tx.fetchInteger("SELECT COUNT(*) FROM \(table)") ?? 0)
                }
                let (version, bytes) = try driver.info(tx)
                let log = try tx.changeLogSize()
                try Store.countNotifications(tx, into: &counts)
                return StoreInfo(
                    path: path,
                    schemaVersion: version,
                    fileBytes: bytes,
                    walBytes: 0,
                    counts: counts,
                    changeLog: ["entries": log.entries, "tombstones": log.tombstones]
                )
            }
        }
        do {
            return try queue.read { db in
                var counts: [String: Int] = [:]
                for (kind, table) in [
                    ("accounts", "account"), ("zones", "zone"), ("records", "record"), ("shares", "share"), ("participants", "participant"),
                ] {
                    counts[kind] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
                }
                let version = try Int.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM shareflow_meta WHERE key = 'schemaVersion'") ?? 0
                func size(_ file: String) -> Int64 {
                    ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? NSNumber)?.int64Value ?? 0
                }
                let log = try StoreTransaction(db, writable: false, path: path).changeLogSize()
                try Store.countNotifications(StoreTransaction(db, writable: false, path: path), into: &counts)
                return StoreInfo(
                    path: path,
                    schemaVersion: version,
                    fileBytes: path == ":memory:" ? 0 : size(path),
                    walBytes: path == ":memory:" ? 0 : size(path + "-wal"),
                    counts: counts,
                    changeLog: ["entries": log.entries, "tombstones": log.tombstones]
                )
            }
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// Drops the change log's tombstones older than `seconds` (SPEC §14 S5); a token from before
    /// them is `changeTokenExpired` from then on, for every process on the store. Returns how
    /// many entries went.
    public func compactChangeLog(olderThan seconds: Double) throws -> Int {
        try write { try $0.pruneChangeLog(before: EngineClock.seconds - seconds) }
    }

    /// R42: closes access requests made more than `seconds` ago (`store compact`, the config's
    /// `sharing.requestTTLDays`); returns how many. Each share whose requests closed has its
    /// change tag renewed (R43).
    public func closeAccessRequests(olderThan seconds: Double) throws -> Int {
        let cutoff = EngineClock.seconds - seconds
        var closed = 0
        // A thousand at a time, each batch its own transaction: a store with many stale
        // requests is never read whole into memory nor locked for long.
        while true {
            let batch = try write { tx in
                let old = try tx.accessRequests(madeBefore: cutoff, limit: 1000)
                for (share, rows) in Dictionary(grouping: old, by: \.share) { try tx.closeAccessRequests(rows.map(\.id), share: share) }
                return old.count
            }
            closed += batch
            if batch < 1000 { return closed }
        }
    }

    /// SQLite's integrity and foreign-key checks, then ShareFlow's: every row of every table
    /// read through the readers the engine uses (each unreadable value is a problem naming its
    /// table, row and column), the schema objects against those the migrations make (a trigger,
    /// view, index or table ShareFlow did not make, or one changed or missing), and the
    /// invariants: one accepted owner per share, every share's record a share record, every
    /// hierarchy share's root in its zone, every parent in its record's zone, no parent cycle,
    /// every private zone owned by an account, every change logged at a position of its own
    /// within its zone's counter, no open access request of someone on the share, no blocked
    /// identity on it, no share with more open requests than `maxRequesters` (SPEC §17).
    ///
    /// Never stops at a bad row: a check that cannot run says so as a problem.
    public func check(maxRequesters: Int = Engine.Options().maxRequesters) throws -> StoreCheck {
        let expected = driver == nil ? try Store.ownSchemaObjects(catalogue) : [:]
        let stored = catalogue.storedTables
        do {
            return try read { tx in
                // An operator's whole pass over every row: not bounded by the statement timeout
                // meant for requests (one timed-out statement would also abort the rest).
                if case .driver(let connection) = tx.connection { try connection.liftStatementTimeout() }
                var notes: [String] = []
                var problems: [String] = []
                /// A part of the check; a failure of the store is a problem line, and the rest goes on.
                func checking(_ what: String, _ body: () throws -> Void) {
                    do { try body() } catch { problems.append("\(what) could not be checked: \(driver == nil ? Store.reason(error) : "\(error)")") }
                }
                let integrity: [String]
                var tables: Set<String>?
                if let driver {
                    // A driver's database keeps its own pages and foreign keys whole; what is
                    // checked here is its schema: what ShareFlow did not make, and every table
                    // and column ShareFlow reads.
                    integrity = ["ok"]
                    checking("the schema") {
                        let found = try driver.schemaProblems(tx, reads: stored.map { ($0.name, $0.columns.map(\.name)) })
                        tables = found.tables
                        problems += found.problems
                    }
                } else {
                    let db = tx.db
                    integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                    checking("the schema") {
                        let objects = try Store.schemaObjects(db)
                        problems += Store.schemaProblems(objects: objects, expected: expected)
                        tables = Set(objects.filter { $0.value.type == "table" }.keys)
                    }
                    checking("foreign keys") {
                        for row in try tx.rows("PRAGMA foreign_key_check") {
                            problems.append(
                                "table \(Store.shown(row, 0)) row \(Store.shown(row, 1)) refers to a missing row of \(Store.shown(row, 2))"
                            )
                        }
                    }
                }
                // A table the store lacks is listed as missing above; the others are read.
                for table in stored where tables.map({ $0.contains(table.name) }) ?? true {
                    checking("table \(table.name)") { problems += try table.damagedRows(tx) }
                }
                checking("share owners") {
                    for row in try tx.rows(
                        """
                        SELECT s.token, (SELECT COUNT(*) FROM participant p WHERE p.shareID = s.id AND p.role = 'owner' AND p.status = 'accepted')
                        FROM share s
                        """
                    ) where row[1] != 1.databaseValue {
                        problems.append("share …/share/\(Store.shown(row, 0)) has \(Store.shown(row, 1)) accepted owners (one expected)")
                    }
                }
                checking("share records") {
                    for row in try tx.rows("SELECT s.token, r.type FROM share s JOIN record r ON r.id = s.recordID WHERE r.type != 'cloudkit.share'")
                    {
                        problems.append("share …/share/\(Store.shown(row, 0)) is saved as a record of type \(Store.shown(row, 1))")
                    }
                }
                checking("share roots") {
                    for row in try tx.rows(
                        """
                        SELECT s.token, s.rootName FROM share s
                        WHERE s.rootName IS NOT NULL AND NOT EXISTS (SELECT 1 FROM record r WHERE r.zoneID = s.zoneID AND r.name = s.rootName)
                        """
                    ) {
                        problems.append("share …/share/\(Store.shown(row, 0)): its root record \(Store.shown(row, 1)) does not exist")
                    }
                }
                checking("parents") {
                    for row in try tx.rows(
                        """
                        SELECT c.name, c.parentName FROM record c
                        WHERE c.parentName IS NOT NULL AND NOT EXISTS (SELECT 1 FROM record p WHERE p.zoneID = c.zoneID AND p.name = c.parentName)
                        """
                    ) {
                        // R34: deleting a parent leaves its children (CloudKit does not cascade).
                        notes.append(
                            "record \(Store.shown(row, 0)): its parent \(Store.shown(row, 1)) was deleted; the record stays without it (R34)"
                        )
                    }
                    problems += try Store.parentCycles(tx)
                }
                checking("access requests") {
                    // SPEC §17: a request is of someone not on the share, blocks keep blocked
                    // identities off it, and no share holds more requests than the cap lets in.
                    for row in try tx.rows(
                        """
                        SELECT s.token, q.requestID, p.status FROM share_request q JOIN share s ON s.id = q.shareID
                        JOIN participant p ON p.shareID = q.shareID AND p.accountID = q.accountID WHERE p.status IN ('pending', 'accepted')
                        """
                    ) {
                        problems.append(
                            "share …/share/\(Store.shown(row, 0)): request \(Store.shown(row, 1)) is open for someone \(Store.shown(row, 2)) on the share (R39)"
                        )
                    }
                    for row in try tx.rows(
                        """
                        SELECT s.token, b.blockID, p.participantID FROM share_block b JOIN share s ON s.id = b.shareID
                        JOIN participant p ON p.shareID = b.shareID AND p.status IN ('pending', 'accepted') AND p.role != 'owner'
                            AND ((b.accountID IS NOT NULL AND p.accountID = b.accountID)
                                 OR (b.accountID IS NULL AND p.lookupKind = b.lookupKind AND p.lookupValue = b.lookupValue))
                        """
                    ) {
                        problems.append(
                            "share …/share/\(Store.shown(row, 0)): participant \(Store.shown(row, 2)) is on the share though blocked (\(Store.shown(row, 1)), R42)"
                        )
                    }
                    // R44: a link's token is its own, and an unclaimed link is nobody's yet.
                    for row in try tx.rows("SELECT p.participantID FROM participant p JOIN share s ON s.token = p.oneTimeToken") {
                        problems.append("participant \(Store.shown(row, 0)): its one-time link's token is a share's own (R44)")
                    }
                    for row in try tx.rows(
                        "SELECT participantID, status FROM participant WHERE oneTimeToken IS NOT NULL AND accountID IS NULL AND status = 'accepted'"
                    ) {
                        problems.append("participant \(Store.shown(row, 0)): an unclaimed one-time link is accepted by no one (R44)")
                    }
                    for row in try tx.rows(
                        "SELECT s.token, COUNT(*) FROM share_request q JOIN share s ON s.id = q.shareID GROUP BY s.id HAVING COUNT(*) > ?",
                        [Int64(maxRequesters)]
                    ) {
                        problems.append(
                            "share …/share/\(Store.shown(row, 0)) has \(Store.shown(row, 1)) open requests, past the cap of \(maxRequesters) (R42)"
                        )
                    }
                }
                checking("zone owners") {
                    for row in try tx.rows(
                        """
                        SELECT z.id, z.name, z.ownerID FROM zone z
                        WHERE z.scope = 'private' AND NOT EXISTS (SELECT 1 FROM account a WHERE a.id = z.ownerID)
                        """
                    ) {
                        problems.append(
                            "zone \(Store.shown(row, 1)) (row \(Store.shown(row, 0))): its owner, account \(Store.shown(row, 2)), does not exist"
                        )
                    }
                }
                checking("the change tokens' key") {
                    // A damaged key refuses every token every client holds.
                    _ = try tx.changeTokenKey()
                }
                checking("change log bounds") {
                    // A log said to start past its counter refuses every token the zone gives.
                    for row in try tx.rows(
                        "SELECT name, id, keptFrom, changeSeq FROM zone WHERE keptFrom > changeSeq OR keptFrom < 0 OR changeSeq < 0"
                    ) {
                        problems.append(
                            "zone \(Store.shown(row, 0)) (row \(Store.shown(row, 1))): its change log is said to start at position \(Store.shown(row, 2)), past its counter \(Store.shown(row, 3)); every token of it would be refused"
                        )
                    }
                }
                checking("change log positions") {
                    // A position past its zone's counter would be handed out again by a later
                    // save; two owner's entries at one position can fall on either side of a
                    // page's end, and one of them is never sent.
                    for row in try tx.rows(
                        """
                        SELECT z.name, z.id, MAX(x.seq), z.changeSeq FROM zone z
                        JOIN (SELECT zoneID, seq FROM record UNION ALL SELECT zoneID, seq FROM zone_change UNION ALL SELECT zoneID, seq FROM view_change) x
                            ON x.zoneID = z.id
                        GROUP BY z.id HAVING MAX(x.seq) > z.changeSeq
                        """
                    ) {
                        problems.append(
                            "zone \(Store.shown(row, 0)) (row \(Store.shown(row, 1))): a change logged at position \(Store.shown(row, 2)), past its counter \(Store.shown(row, 3)); later changes would reuse positions"
                        )
                    }
                    for row in try tx.rows(
                        """
                        SELECT z.name, z.id, x.seq, COUNT(*) FROM (SELECT zoneID, seq FROM record WHERE seq > 0 UNION ALL SELECT zoneID, seq FROM zone_change) x
                        JOIN zone z ON z.id = x.zoneID GROUP BY z.id, x.seq HAVING COUNT(*) > 1
                        """
                    ) {
                        problems.append(
                            "zone \(Store.shown(row, 0)) (row \(Store.shown(row, 1))): \(Store.shown(row, 3)) changes at position \(Store.shown(row, 2)) of its owner's feed (one expected)"
                        )
                    }
                }
                if tables?.contains("asset_upload") ?? true {
                    checking("assets") { try checkAssets(tx, problems: &problems, notes: &notes) }
                }
                var result = StoreCheck(integrity: integrity, problems: problems)
                result.notes = notes
                return result
            }
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// A value of a row as a problem line shows it: text as it is, anything else by its kind.
    static func shown(_ row: [DatabaseValue], _ index: Int) -> String {
        let value = index < row.count ? row[index] : .null
        if case .string(let s) = value.storage { return StoredRow.excerpt(s) }
        if case .int64(let n) = value.storage { return String(n) }
        return "(\(StoredRow.describe(value)))"
    }

    // MARK: Schema objects

    /// A schema object as `sqlite_master` lists it.
    struct SchemaObject: Equatable {
        let type: String
        let table: String
        /// Its SQL with runs of white space made one space (nil for automatic indexes).
        let sql: String?
    }

    /// The store's tables, indexes, triggers and views by name, SQLite's own (`sqlite_…`) left out.
    static func schemaObjects(_ db: Database) throws -> [String: SchemaObject] {
        var objects: [String: SchemaObject] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").map({
            Array($0.databaseValues)
        }) {
            let sql = row[3].storage
            objects[shown(row, 1)] = SchemaObject(
                type: shown(row, 0),
                table: shown(row, 2),
                sql: {
                    if case .string(let s) = sql { return normalized(s) }
                    return nil
                }()
            )
        }
        return objects
    }

    package static func normalized(_ sql: String) -> String {
        sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).joined(separator: " ")
    }

    /// What the migrations make, from an empty in-memory database migrated now: the list
    /// follows every new migration by itself.
    static func ownSchemaObjects(_ catalogue: StoreCatalogue) throws -> [String: SchemaObject] {
        let fresh = try DatabaseQueue()
        try migrator(catalogue).migrate(fresh)
        return try fresh.read { try schemaObjects($0) }
    }

    /// Objects ShareFlow did not make (a trigger runs on every change: one that adds a
    /// participant to every new share gives a stranger every share), and its own changed or
    /// missing.
    static func schemaProblems(objects: [String: SchemaObject], expected: [String: SchemaObject]) -> [String] {
        var problems: [String] = []
        for (name, object) in objects.sorted(by: { $0.key < $1.key }) {
            guard let own = expected[name], own.type == object.type else {
                let on = object.type == "table" || object.type == "view" ? "" : " on table \(object.table)"
                problems.append("\(object.type) \(name)\(on) is not ShareFlow's: its schema makes no such object; drop it")
                continue
            }
            if own != object {
                problems.append("\(object.type) \(name) differs from the one ShareFlow's schema makes")
            }
        }
        for (name, own) in expected.sorted(by: { $0.key < $1.key }) where objects[name]?.type != own.type {
            problems.append("\(own.type) \(name) of ShareFlow's schema is missing")
        }
        return problems
    }

    // MARK: Parent cycles

    /// R25: parent chains end. A cycle (a → b → a), which only another program can leave, is
    /// listed once, by the records on it in chain order from the least name.
    static func parentCycles(_ tx: StoreTransaction) throws -> [String] {
        var zoneNames: [Int64: String] = [:]
        for row in try tx.rows("SELECT id, name FROM zone") {
            if case .int64(let id) = row[0].storage { zoneNames[id] = shown(row, 1) }
        }
        // Zone → record → parent; rows of other types are listed as damaged already.
        var parents: [Int64: [String: String]] = [:]
        for row in try tx.rows("SELECT zoneID, name, parentName FROM record WHERE parentName IS NOT NULL") {
            guard case .int64(let zone) = row[0].storage,
                case .string(let name) = row[1].storage,
                case .string(let parent) = row[2].storage
            else { continue }
            parents[zone, default: [:]][name] = parent
        }
        var problems: [String] = []
        for (zone, map) in parents.sorted(by: { $0.key < $1.key }) {
            var done = Set<String>()
            for start in map.keys.sorted() where !done.contains(start) {
                var path: [String] = []
                var onPath: [String: Int] = [:]
                var current: String? = start
                while let n = current, !done.contains(n) {
                    if let at = onPath[n] {
                        var cycle = Array(path[at...])
                        let first = cycle.indices.min { cycle[$0] < cycle[$1] }!
                        cycle = Array(cycle[first...] + cycle[..<first])
                        problems.append(
                            "records \((cycle + [cycle[0]]).map(StoredRow.excerpt).joined(separator: " → ")) in zone \(zoneNames[zone] ?? "?") (row \(zone)) form a parent cycle (R25)"
                        )
                        break
                    }
                    onPath[n] = path.count
                    path.append(n)
                    current = map[n]
                }
                done.formUnion(path)
            }
        }
        return problems
    }

    /// Copies the store to `destination` with SQLite's online backup: consistent while other
    /// processes go on writing. Refuses to overwrite a file.
    public func backup(to destination: String) throws {
        try requireSQLite("store backup")
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError.cannotBackUp(destination: destination, reason: "it exists; a backup never overwrites a file")
        }
        do {
            let target = try DatabaseQueue(path: destination)
            try queue.backup(to: target)
            try target.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try target.close()
            // SPEC §19 A4: the blobs, beside the backup as beside the store (hard links where
            // the folders share a file system: a blob is never written again).
            if let from = fileAssets {
                let to = AssetBlobs(folder: URL(fileURLWithPath: destination + ".assets"))
                for sum in try from.checksums() { try from.carry(sum, to: to) }
            }
        } catch let error as DatabaseError {
            try? FileManager.default.removeItem(atPath: destination)
            throw StoreError.cannotBackUp(destination: destination, reason: Store.reason(error))
        }
    }
}
