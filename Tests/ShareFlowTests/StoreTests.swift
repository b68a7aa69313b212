import Foundation
import GRDB
import XCTest
@testable import ShareFlow

final class StoreTests: XCTestCase {
    func testNewStoreIsWALWithSchemaVersion() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sf-store-\(UUID())")
        let path = dir.appendingPathComponent("nested/store.sqlite").path
        let store = try Store(path: path)
        let mode = try store.read { try String.fetchOne($0.db, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(mode, "wal")
        let version = try store.read { try String.fetchOne($0.db, sql: "SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'") }
        XCTAssertEqual(version, String(Store.schemaVersion))
        // Reopening an existing store works.
        _ = try Store(path: path)
    }

    func testForeignFileIsRefusedByteForByte() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sf-store-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
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
        XCTAssertEqual(keys, ["a", "format", "schemaVersion"])
    }
}
