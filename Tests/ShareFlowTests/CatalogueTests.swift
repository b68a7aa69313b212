import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// The schema is written once (SPEC §16 M6, `StoreCatalogue`): SQLite's history of migrations
/// leaves it, PostgreSQL stores of every earlier version reach it, and a column added in the
/// catalogue alone reaches both drivers, `store check` and `store copy`.
final class CatalogueTests: XCTestCase {
    func testTheCatalogueIsWhole() {
        XCTAssertEqual(StoreCatalogue.current.flaws(), [])
        XCTAssertEqual(StoreCatalogue.current.version, Store.schemaVersion)
        // A column added later must say what existing rows hold.
        var flawed = StoreCatalogue.current
        flawed.version = 16
        flawed.tables[flawed.tables.firstIndex { $0.name == "record" }!].columns.append(.init("priority", .integer, since: 16))
        flawed.indexes.append(.init("share_nothing", on: "share", ["nothing"]))
        XCTAssertEqual(
            flawed.flaws(),
            [
                "record.priority was added after its table: it needs a default or to be nullable",
                "index share_nothing: nothing is not a column of share",
            ]
        )
        // Each mistake a developer can make adding to it, told before a store is touched.
        func flaws(_ change: (inout StoreCatalogue) -> Void) -> [String] {
            var catalogue = StoreCatalogue.current
            catalogue.version = 16
            change(&catalogue)
            return catalogue.flaws()
        }
        let record = StoreCatalogue.current.tables.firstIndex { $0.name == "record" }!
        XCTAssertEqual(
            flaws { $0.tables[record].columns.append(.init("a", .integer, default: "NULL", since: 16)) },
            ["record.a was added after its table: it needs a default or to be nullable"]
        )
        XCTAssertEqual(
            flaws { $0.tables[record].columns.append(.init("b", .text, nullable: true, unique: true, since: 16)) },
            ["record.b was added after its table: a column added so cannot be unique or part of the key (add a unique index)"]
        )
        XCTAssertEqual(
            flaws { $0.tables[record].columns.append(.init("c", .real, default: "random()", since: 16)) },
            ["record.c: its default random() is not a constant of its kind"]
        )
        XCTAssertEqual(
            flaws { $0.tables[record].columns.append(.init("d", .integer, default: "'high'", since: 16)) },
            ["record.d: its default 'high' is not a constant of its kind"]
        )
        XCTAssertEqual(
            flaws {
                $0.tables[record].columns.append(.init("e", .integer, default: "0", since: 16))
                $0.indexes.append(.init("record_e", on: "record", ["e"]))
            },
            ["index record_e is older than its column e: its `since` is the version that adds it"]
        )
        XCTAssertEqual(
            flaws { $0.indexes.append(.init("record_later", on: "record", ["name"], since: 17)) },
            ["index record_later is newer than the catalogue's version 16"]
        )
        XCTAssertEqual(
            flaws { $0.tables.append(.init("note", key: .made, columns: [.init("id", .integer)])) },
            ["table note is not one of version 9's: it needs `since`, the version that adds it"]
        )
    }

    /// What SQLite says of a schema, table by table: columns (type, NOT NULL, default, key),
    /// foreign keys, WITHOUT ROWID, indexes and triggers (their SQL, white space made one).
    private func sqliteShape(_ db: Database) throws -> [String] {
        var shape: [String] = []
        let tables = try String.fetchAll(
            db,
            sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name != 'grdb_migrations' ORDER BY name"
        )
        for table in tables {
            for row in try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", arguments: [table]) {
                shape.append(
                    "\(table).\(row[0] as String) \(row[1] as String) notnull=\(row[2] as Int) default=\((row[3] as String?) ?? "-") pk=\(row[4] as Int)"
                )
            }
            for row in try Row.fetchAll(db, sql: "SELECT \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list(?)", arguments: [table])
            {
                shape.append("\(table) fk \(row[1] as String) -> \(row[0] as String)(\((row[2] as String?) ?? "-")) on delete \(row[3] as String)")
            }
            let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [table]) ?? ""
            shape.append("\(table) without rowid=\(sql.uppercased().contains("WITHOUT ROWID"))")
            for row in try Row.fetchAll(db, sql: "SELECT name, \"unique\", origin FROM pragma_index_list(?) ORDER BY name", arguments: [table]) {
                let name: String = row[0]
                let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [name])
                // Automatic indexes are named by their position: the columns and kind tell them.
                let shown = name.hasPrefix("sqlite_autoindex") ? "auto" : name
                shape.append("\(table) index \(shown) unique=\(row[1] as Int) origin=\(row[2] as String) (\(columns.joined(separator: ", ")))")
            }
        }
        for row in try Row.fetchAll(
            db,
            sql: "SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name"
        ) {
            shape.append("\(row[0] as String) \(row[1] as String): \(Store.normalized(row[2] as String))")
        }
        return shape.sorted()
    }

    func testSQLitesMigrationsLeaveTheCatalogue() throws {
        let migrated = try DatabaseQueue()
        try Store.migrator().migrate(migrated)
        let made = try DatabaseQueue()
        try made.write { db in for statement in StoreCatalogue.current.creation(.sqlite) { try db.execute(sql: statement) } }
        let expected = try made.read(sqliteShape)
        XCTAssertEqual(try migrated.read(sqliteShape), expected)
        // A store of version 9 (the last hand-written migration), with rows, reaches it too.
        let (dir, path) = try makeOldStore(
            upTo: "v9",
            migrator: Store.migrator(),
            sql: "INSERT INTO account (userRecordID, discoverability, createdAt) VALUES ('_a', 'granted', 0)"
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        XCTAssertEqual(try store.read { try sqliteShape($0.db) }, expected)
        XCTAssertEqual(try store.read { try $0.texts("SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'") }, [String(Store.schemaVersion)])
        let check = try store.check()
        XCTAssertTrue(check.isHealthy, check.problems.joined(separator: "\n"))
    }

    /// The catalogue with a column (and an index on it) added at the next version, as a developer
    /// adds one: one place.
    private static let withPriority: StoreCatalogue = {
        var catalogue = StoreCatalogue.current
        catalogue.version = StoreCatalogue.current.version + 1
        let record = catalogue.tables.firstIndex { $0.name == "record" }!
        catalogue.tables[record].columns.append(.init("priority", .integer, default: "0", since: catalogue.version))
        catalogue.indexes.append(.init("record_priority", on: "record", ["zoneID", "priority"], since: catalogue.version))
        return catalogue
    }()

    /// One account, zone and record, written as rows.
    private func addRows(_ store: Store) throws {
        try store.write { tx in
            _ = try tx.run("INSERT INTO account (id, userRecordID, discoverability, createdAt) VALUES (1, '_owner', 'granted', 0)", [])
            _ = try tx.run("INSERT INTO zone (id, container, scope, ownerID, name) VALUES (1, 'iCloud.test', 'private', 1, 'Trips')", [])
            _ = try tx.run(
                """
                INSERT INTO record (id, zoneID, name, type, fields, changeTag, modifiedAt, seq) VALUES (1, 1, 'r1', 'Trip', '{}', 1, 0, 1)
                """,
                []
            )
            _ = try tx.run("UPDATE zone SET changeSeq = 1 WHERE id = 1", [])
            _ = try tx.run(
                "INSERT INTO decision (point, policies, allow, reasons, duration, at) VALUES ('share.accept', '[]', 1, '[]', 0.001, 0)",
                []
            )
        }
    }

    func testAColumnAddedToTheCatalogueReachesBothStoresTheCheckAndTheCopy() throws {
        let scratch = CatalogueTests.withPriority
        XCTAssertEqual(scratch.flaws(), [])
        let dir = try makeTemporaryFolder("sf-catalogue")
        defer { try? FileManager.default.removeItem(at: dir) }

        // An SQLite store of today's schema, with rows, opened by a shareflow of the new one.
        let path = dir.appendingPathComponent("store.sqlite").path
        do {
            let today = try Store(path: path)
            try addRows(today)
            today.close()
        }
        let store = try Store(path: path, catalogue: scratch)
        XCTAssertEqual(try store.read { try $0.texts("SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'") }, [String(scratch.version)])
        XCTAssertEqual(try store.read { try $0.texts("SELECT name FROM pragma_table_info('record') WHERE name = 'priority'") }, ["priority"])
        XCTAssertEqual(try store.read { try $0.texts("SELECT name FROM sqlite_master WHERE name = 'record_priority'") }, ["record_priority"])
        XCTAssertEqual(
            try store.read { try $0.fetchInteger("SELECT priority FROM record WHERE name = 'r1'") },
            0,
            "an existing row takes the default"
        )
        // `store check` reads the new column through its kind's reader: healthy, then a value
        // of the wrong kind named by table, row and column.
        let healthy = try store.check()
        XCTAssertTrue(healthy.isHealthy, healthy.problems.joined(separator: "\n"))
        _ = try store.write { try $0.run("UPDATE record SET priority = 'high' WHERE name = 'r1'", []) }
        let damaged = try store.check()
        XCTAssertTrue(damaged.problems.contains { $0.contains("record") && $0.contains("priority") }, damaged.problems.joined(separator: "\n"))
        _ = try store.write { try $0.run("UPDATE record SET priority = 7 WHERE name = 'r1'", []) }
        // A new store of the new schema, in memory (no image of it: migrated) and in a file.
        let fresh = try Store(path: ":memory:", catalogue: scratch)
        XCTAssertEqual(try fresh.read { try $0.texts("SELECT name FROM pragma_table_info('record') WHERE name = 'priority'") }, ["priority"])
        // `store copy` carries it, SQLite to SQLite.
        let copy = try Store(path: dir.appendingPathComponent("copy.sqlite").path, catalogue: scratch)
        let report = try store.copy(to: copy)
        XCTAssertEqual(report.rows["record"], 1)
        XCTAssertEqual(report.rows["decision"], 1)
        XCTAssertEqual(try copy.read { try $0.fetchInteger("SELECT priority FROM record WHERE name = 'r1'") }, 7)

        // PostgreSQL: a store of today's schema opened by the new shareflow, then a copy into it.
        guard let template = EachDriver.postgresTemplate else { return }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        try Store.open(url).close()
        let cluster = try Store.open(url, catalogue: scratch)
        defer { cluster.close() }
        XCTAssertEqual(try cluster.read { try $0.texts("SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'") }, [String(scratch.version)])
        XCTAssertEqual(
            try cluster.read {
                try $0.texts(
                    "SELECT data_type FROM information_schema.columns WHERE table_schema = 'shareflow' AND table_name = 'record' AND column_name = 'priority'"
                )
            },
            ["bigint"]
        )
        XCTAssertEqual(
            try cluster.read { try $0.texts("SELECT indexname FROM pg_indexes WHERE schemaname = 'shareflow' AND indexname = 'record_priority'") },
            ["record_priority"]
        )
        _ = try store.copy(to: cluster)
        XCTAssertEqual(try cluster.read { try $0.fetchInteger("SELECT priority FROM record WHERE name = 'r1'") }, 7)
        let checked = try cluster.check()
        XCTAssertTrue(checked.isHealthy, checked.problems.joined(separator: "\n"))
    }

    /// What PostgreSQL says of the schema `shareflow`: columns (type, nullability, default,
    /// collation, identity), constraints, indexes, triggers and functions. An identity's kind
    /// (ALWAYS or BY DEFAULT) is left out: the decision log's was ALWAYS before the catalogue,
    /// and `store copy` writes IDs into either (OVERRIDING SYSTEM VALUE).
    private func postgresShape(_ store: Store) throws -> [String] {
        try store.read { tx in
            var shape: [String] = []
            for row in try tx.rows(
                """
                SELECT table_name || '.' || column_name || ' ' || data_type || ' nullable=' || is_nullable || ' default=' || COALESCE(column_default, '-')
                    || ' collation=' || COALESCE(collation_name, '-') || ' identity=' || is_identity
                FROM information_schema.columns WHERE table_schema = 'shareflow'
                """
            ) { shape.append(String.fromDatabaseValue(row[0]) ?? "?") }
            for row in try tx.rows(
                """
                SELECT c.conrelid::regclass::text || ' ' || c.contype::text || ' ' || pg_get_constraintdef(c.oid)
                FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = 'shareflow'
                """
            ) { shape.append(String.fromDatabaseValue(row[0]) ?? "?") }
            for row in try tx.rows("SELECT indexdef FROM pg_indexes WHERE schemaname = 'shareflow'") {
                shape.append(String.fromDatabaseValue(row[0]) ?? "?")
            }
            for row in try tx.rows(
                """
                SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'shareflow' AND NOT t.tgisinternal
                """
            ) { shape.append(String.fromDatabaseValue(row[0]) ?? "?") }
            for row in try tx.rows(
                """
                SELECT p.proname || ': ' || p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'shareflow'
                """
            ) { shape.append(String.fromDatabaseValue(row[0]) ?? "?") }
            for row in try tx.rows("SELECT key FROM shareflow_meta ORDER BY key") {
                shape.append("meta " + (String.fromDatabaseValue(row[0]) ?? "?"))
            }
            return shape.sorted()
        }
    }

    /// PostgreSQL stores made by the migrations from before the catalogue
    /// (`PostgresSchemaBeforeCatalogue`), at each of their versions (9, 10, 11), with a row in
    /// each table they had, are brought to the catalogue: the same shape as a new store, healthy
    /// to `store check` (its functions' bodies are the catalogue's), their rows kept, and a copy
    /// writes into their decision log.
    func testPostgreSQLStoresOfEveryEarlierVersionReachTheCatalogue() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let newURL = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(newURL) }
        let made = try Store.open(newURL)
        let expected = try postgresShape(made)
        made.close()
        for version in 9...11 {
            let url = try PostgresStore.makeScratch(template: template)
            defer { PostgresStore.dropScratch(url) }
            do {
                let store = try Store.open(url)
                try store.write { tx in
                    _ = try tx.run("DROP SCHEMA shareflow CASCADE", [])
                    _ = try tx.run("CREATE SCHEMA shareflow", [])
                    for (n, step) in PostgresSchemaBeforeCatalogue.migrations.prefix(version - 8).enumerated() {
                        for statement in PostgresSchemaBeforeCatalogue.statements(step) { _ = try tx.run(statement, []) }
                        _ = try tx.run("UPDATE shareflow_meta SET value = '\(9 + n)' WHERE key = 'schemaVersion'", [])
                    }
                    _ = try tx.run("INSERT INTO shareflow_meta (key, value) VALUES ('syncKey', '\(String(repeating: "ab", count: 32))')", [])
                    _ = try tx.run("INSERT INTO account (userRecordID, discoverability, createdAt) VALUES ('_old', 'granted', 0)", [])
                }
                store.close()
            }
            let old = try Store.open(url)
            defer { old.close() }
            XCTAssertEqual(try postgresShape(old), expected, "a store of version \(version)")
            let check = try old.check()
            XCTAssertTrue(check.isHealthy, "version \(version): \(check.problems.joined(separator: "\n"))")
            XCTAssertEqual(try old.read { try $0.texts("SELECT userRecordID FROM account") }, ["_old"])
            if version == 11 {
                // Its decision log's IDs are made ALWAYS: a copy writes them all the same.
                _ = try old.write { try $0.run("DELETE FROM account", []) }
                let source = try Store(path: ":memory:")
                try addRows(source)
                let report = try source.copy(to: old)
                XCTAssertEqual(report.rows["decision"], 1)
            }
        }
    }

    /// A table, index or trigger an upgrade would make, made already by someone else: the
    /// store is refused at once, naming it, and left as it was (not half-upgraded, nor
    /// retried for the busy timeout as another process's migration).
    func testAnUpgradeMeetingAnObjectItWouldMakeIsRefusedAtOnce() throws {
        let (dir, path) = try makeOldStore(upTo: "v9", migrator: Store.migrator(), sql: "CREATE TABLE decision (id INTEGER PRIMARY KEY, note TEXT)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let start = Date()
        XCTAssertThrowsError(try Store(path: path)) { error in
            XCTAssertTrue("\(error)".contains("table decision ShareFlow did not make"), "\(error)")
            XCTAssertTrue("\(error)".contains("rename or drop it"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        XCTAssertEqual(try queue.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }.last, "v9")
    }

    /// PostgreSQL's `store check` holds the schema's indexes, triggers, keys, unique
    /// constraints and foreign keys to the catalogue: each taken away (or a trigger disabled
    /// or made to fire otherwise) is a problem naming it.
    func testPostgreSQLsCheckFindsWhatWasTakenFromTheSchema() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let tampers: [(sql: String, named: String)] = [
            ("ALTER TABLE participant DISABLE TRIGGER participant_changes_share", "trigger participant_changes_share is disabled"),
            ("DROP TRIGGER participant_changes_share ON participant", "trigger participant_changes_share of ShareFlow's schema is missing"),
            (
                "DROP TRIGGER share_update_changes_share ON share; CREATE TRIGGER share_update_changes_share AFTER INSERT ON share FOR EACH STATEMENT EXECUTE FUNCTION share_changes_share()",
                "trigger share_update_changes_share differs"
            ),
            ("ALTER TABLE share DROP CONSTRAINT share_token_key", "share unique (token) of ShareFlow's schema is missing"),
            ("DROP INDEX record_seq", "index record_seq of ShareFlow's schema is missing"),
            (
                "ALTER TABLE participant DROP CONSTRAINT participant_shareid_fkey",
                "participant foreign key (shareid) -> share on delete cascade of ShareFlow's schema is missing"
            ),
            ("ALTER TABLE account ADD CONSTRAINT one_name UNIQUE (name)", "account unique (name) was not made by ShareFlow"),
        ]
        for (sql, named) in tampers {
            let url = try PostgresStore.makeScratch(template: template)
            defer { PostgresStore.dropScratch(url) }
            let store = try Store.open(url)
            defer { store.close() }
            XCTAssertTrue(try store.check().isHealthy, "before: \(sql)")
            try store.write { tx in for statement in sql.components(separatedBy: "; ") { _ = try tx.run(statement, []) } }
            let check = try store.check()
            XCTAssertTrue(check.problems.contains { $0.contains(named) }, "\(sql): \(check.problems)")
        }
    }
}
