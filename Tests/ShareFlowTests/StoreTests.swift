import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest
@testable import ShareFlow

final class StoreTests: XCTestCase {
    func testNewStoreIsWALWithSchemaVersion() throws {
        let dir = try makeTemporaryFolder("sf-store")
        let path = dir.appendingPathComponent("nested/store.sqlite").path
        let store = try Store(path: path)
        let mode = try store.read { try String.fetchOne($0.db, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(mode, "wal")
        let version = try store.read { try String.fetchOne($0.db, sql: "SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'") }
        XCTAssertEqual(version, String(Store.schemaVersion))
        // Reopening an existing store works.
        _ = try Store(path: path)
    }

    /// A new `:memory:` store is made from `freshSchemaSQL` rather than by the migrations: it
    /// must be exactly what the migrations leave (every table, index and trigger as text, the
    /// metadata and the migrations applied), in memory and in a file.
    func testFreshSchemaIsTheMigratedSchema() throws {
        func contents(_ db: Database) throws -> [String] {
            let schema = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
                .map { "\($0["type"] as String) \($0["name"] as String) on \($0["tbl_name"] as String): \(($0["sql"] as String?) ?? "-")" }
            // The change tokens' key is each store's own (random): only its shape compares.
            let meta = try Row.fetchAll(db, sql: "SELECT key, value FROM shareflow_meta ORDER BY key").map { row -> String in
                let (key, value): (String, String) = (row[0], row[1])
                return key == "syncKey" ? "syncKey=\(value.count) hex digits: \(value.allSatisfy(\.isHexDigit))" : "\(key)=\(value)"
            }
            let migrations = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
            let foreignKeys = try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_list('record')").map(\.description)
            return schema + meta + migrations + foreignKeys
        }
        let migrated = try DatabaseQueue()
        try Store.migrator.migrate(migrated)
        let expected = try migrated.read(contents)
        let fresh = try Store(path: ":memory:")
        let found = try fresh.read { try contents($0.db) }
        if found != expected {
            // What to paste into FreshSchema.swift after a new migration.
            let sql = try migrated.read { try String.fetchAll($0, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid") }
            print(sql.joined(separator: ";\n") + ";")
        }
        XCTAssertEqual(found, expected)
        XCTAssertTrue(try fresh.queue.read { try Store.migrator.hasCompletedMigrations($0) })
        // A file store still migrates, to the same schema.
        let dir = try makeTemporaryFolder("sf-store")
        let file = try Store(path: dir.appendingPathComponent("store.sqlite").path)
        XCTAssertEqual(try file.read { try contents($0.db) }, expected)
    }

    /// v4 keeps a share's URL token, not the URL: a v3 store's shares keep working, under the
    /// same change tags, and their URLs follow the public URL.
    func testV3StoreMigratesShareURLsToTokensKeepingChangeTags() throws {
        let (dir, path) = try makeOldStore(upTo: "v3", migrator: Store.migrator, sql: """
            INSERT INTO account (id, userRecordID, discoverability, createdAt) VALUES (1, '_owner', 'notDetermined', 0);
            INSERT INTO zone (id, container, scope, ownerID, name) VALUES (1, 'iCloud.t', 'private', 1, 'Z');
            INSERT INTO record (id, zoneID, name, type, fields, changeTag, modifiedAt, tag) VALUES (1, 1, 'doc', 'Doc', '{}', 1, 0, 'aaaa');
            INSERT INTO record (id, zoneID, name, type, fields, changeTag, modifiedAt, tag) VALUES (2, 1, 'share', 'cloudkit.share', '{}', 1, 0, 'bbbb');
            INSERT INTO share (id, recordID, zoneID, url, rootName, publicPermission)
                VALUES (1, 2, 1, 'https://shareflow.invalid/share/Tok3n_-abc', 'doc', 'none');
            """)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        let row = try store.read { tx in
            try Row.fetchOne(tx.db, sql: "SELECT s.token, r.tag FROM share s JOIN record r ON r.id = s.recordID")
        }
        XCTAssertEqual(row?[0] as String?, "Tok3n_-abc")
        XCTAssertEqual(row?[1] as String?, "bbbb", "migrating changes no change tag")
    }

    /// v5 (R31) adds a record's creation date: a v4 store's records take their modification
    /// date, keep their change tags and their creator.
    func testV4StoreMigratesWithCreationDatesKeepingChangeTags() throws {
        let (dir, path) = try makeOldStore(upTo: "v4", migrator: Store.migrator, sql: """
            INSERT INTO account (id, userRecordID, discoverability, createdAt) VALUES (1, '_owner', 'granted', 0);
            INSERT INTO zone (id, container, scope, ownerID, name) VALUES (1, 'iCloud.t', 'private', 1, 'Z');
            INSERT INTO record (id, zoneID, name, type, fields, changeTag, createdBy, modifiedBy, modifiedAt, tag)
                VALUES (1, 1, 'doc', 'Doc', '{}', 1, 1, 1, 1234.5, 'aaaa');
            """)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        let row = try store.read { tx in
            try Row.fetchOne(tx.db, sql: "SELECT createdAt, tag FROM record WHERE id = 1")
        }
        XCTAssertEqual(row?[0] as Double?, 1234.5)
        XCTAssertEqual(row?[1] as String?, "aaaa", "migrating changes no change tag")
        let check = try store.check()
        XCTAssertEqual(check.problems, [])
        XCTAssertEqual(check.integrity, ["ok"])
    }

    func testForeignFileIsRefusedByteForByte() throws {
        let dir = try makeTemporaryFolder("sf-store")
        let file = dir.appendingPathComponent("data.bin")
        let bytes = Data((0..<4096).map { UInt8($0 % 251) })
        try bytes.write(to: file)
        XCTAssertThrowsError(try Store(path: file.path)) { error in
            XCTAssertTrue("\(error)".contains("is not a ShareFlow store"), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: file), bytes)
    }

    func testNestedWritesJoinTheOpenTransaction() throws {
        let store = try Store(path: ":memory:")
        try store.write { db in
            try db.db.execute(sql: "INSERT INTO shareflow_meta VALUES ('a', '1')")
            // An inner failure rolls back only its savepoint.
            XCTAssertThrowsError(try store.write { db in
                try db.db.execute(sql: "INSERT INTO shareflow_meta VALUES ('b', '2')")
                throw CancellationError()
            })
            let inner = try store.read { try String.fetchOne($0.db, sql: "SELECT value FROM shareflow_meta WHERE key = 'a'") }
            XCTAssertEqual(inner, "1")
        }
        let keys = try store.read { try String.fetchAll($0.db, sql: "SELECT key FROM shareflow_meta ORDER BY key") }
        XCTAssertEqual(keys, ["a", "format", "schemaVersion", "syncKey"])
    }
}
