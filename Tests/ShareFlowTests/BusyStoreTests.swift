import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// A store another connection keeps busy past the busy timeout: a write is serviceUnavailable,
/// with retryAfter and the store's path but no SQL, and is served again once the store is free.
class BusyStoreTests: XCTestCase {
    func testABusyStoreIsServiceUnavailableWithRetryAfterAndThePathButNoSQL() throws {
        let dir = try makeTemporaryFolder("busy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("store.sqlite").path
        let w = try World(engine: Engine(store: Store(path: path, busyTimeout: 0.2)))
        let blocker = try DatabaseQueue(path: path)
        try blocker.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            defer { try? db.execute(sql: "ROLLBACK") }
            XCTAssertThrowsError(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip])) { e in
                let error = e as! ShareFlowError
                XCTAssertEqual(error.code, .serviceUnavailable)
                XCTAssertEqual(error.retryAfter, 1)
                XCTAssertTrue(error.message.contains(path), error.message)
                XCTAssertTrue(error.message.contains("busy"), error.message)
                XCTAssertFalse(error.message.contains("BEGIN"), error.message)
                XCTAssertFalse(error.message.contains("SQLite error"), error.message)
            }
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).error, "served again once free")
    }
}
