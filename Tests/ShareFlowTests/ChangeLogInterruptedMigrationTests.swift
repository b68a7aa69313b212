import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// A store whose v7 migration committed but whose v8 did not (a process stopped between the
/// two, which GRDB commits one by one): `logPending` is set and the log empty. A shareflow of
/// schema 7 opens such a store as its own and logs its saves; v8 must then start the feeds
/// from the store's contents without colliding with the entries already there.
final class ChangeLogInterruptedMigrationTests: XCTestCase {
    func testAStoreLeftBetweenV7AndV8WithEntriesFromASchema7WriterOpens() throws {
        // Left by this shareflow's v7 (logPending set); then a schema-7 shareflow saved 'a' and
        // made 'c' (its log rows, as v7 writes them: no record rows named).
        let (dir, path) = try makeOldStore(
            upTo: "v7",
            migrator: Store.migrator(),
            sql: ChangeLogMigrationTests.rows + """
                INSERT INTO record (id, zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt, tag, createdAt) VALUES
                    (4, 1, 'c', 'Note', '{"title":{"s":"C"}}', NULL, 1, 1, 1, 13, 'tc', 13);
                UPDATE zone SET changeSeq = 2 WHERE id = 1;
                INSERT INTO zone_change (zoneID, name, type, seq, deleted, at) VALUES (1, 'a', 'Note', 1, 0, 0), (1, 'c', 'Note', 2, 0, 0);
                INSERT INTO view_change (zoneID, viewerID, name, type, seq, deleted, at) VALUES (1, 2, 'a', 'Note', 1, 0, 0), (1, 2, 'c', 'Note', 2, 0, 0);
                INSERT INTO feed (id, accountID, container, environment, scope, seq, keptFrom) VALUES
                    (1, 1, 'iCloud.t', 'development', 'private', 1, 0), (2, 2, 'iCloud.t', 'development', 'shared', 1, 0);
                INSERT INTO feed_change (feedID, zoneName, ownerName, seq, deleted, reason, at) VALUES (1, 'Z', '_alice', 1, 0, NULL, 0), (2, 'Z', '_alice', 1, 0, NULL, 0);
                """
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let (zone, alice, bob, owner, viewer) = try ChangeLogMigrationTests.firstReads(path)
        XCTAssertEqual(owner.modifications.map(\.recordID.recordName).sorted(), ["a", "b", "c", "share-z"])
        XCTAssertEqual(viewer.modifications.map(\.recordID.recordName).sorted(), ["a", "b", "c", "share-z"])
        // A save after: a position past every entry, so a token from before sees it.
        let a = try alice.privateCloudDatabase.fetchRecord(RecordID(recordName: "a", zoneID: zone))
        a["title"] = .string("A2")
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(saving: [a]).firstError)
        XCTAssertEqual(
            try alice.privateCloudDatabase.recordZoneChanges(zone, since: owner.changeToken).modifications.map(\.recordID.recordName),
            ["a"]
        )
        XCTAssertEqual(try bob.sharedCloudDatabase.recordZoneChanges(zone, since: viewer.changeToken).modifications.map(\.recordID.recordName), ["a"])
        let store = try Store(path: path)
        XCTAssertNil(try store.read { try String.fetchOne($0.db, sql: "SELECT value FROM shareflow_meta WHERE key = 'logPending'") })
        XCTAssertEqual(
            try store.read {
                try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM zone_change z JOIN zone ON zone.id = z.zoneID WHERE z.seq > zone.changeSeq")
            },
            0
        )
        XCTAssertEqual(try store.check().problems, [])
    }
}
