import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// A store made before the change log (schema v6) starts its feeds from what it holds, and a
/// store with the v7 log keeps it through v8 (which names each entry's record row) and v9
/// (where the owner's entries become their records' positions): all read the same feeds as a
/// store that logged every save.
class ChangeLogMigrationTests: XCTestCase {
    /// Alice's zone 'Z' with records a, b (b under a) and a zone share Bob accepted (read only);
    /// also ChangeLogInterruptedMigrationTests' store.
    static let rows = """
        INSERT INTO account (id, userRecordID, discoverability, createdAt) VALUES (1, '_alice', 'granted', 0), (2, '_bob', 'granted', 0);
        INSERT INTO account_email (email, accountID, position) VALUES ('alice@example.com', 1, 0), ('bob@example.com', 2, 0);
        INSERT INTO zone (id, container, environment, scope, ownerID, name) VALUES (1, 'iCloud.t', 'development', 'private', 1, 'Z');
        INSERT INTO record (id, zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt, tag, createdAt) VALUES
            (1, 1, 'a', 'Note', '{"title":{"s":"A"}}', NULL, 1, 1, 1, 10, 'ta', 10),
            (2, 1, 'b', 'Note', '{"title":{"s":"B"}}', 'a', 1, 1, 1, 11, 'tb', 11),
            (3, 1, 'share-z', 'cloudkit.share', '{}', NULL, 1, 1, 1, 12, 'ts', 12);
        INSERT INTO share (id, recordID, zoneID, token, rootName, publicPermission) VALUES (1, 3, 1, 'tok', NULL, 'none');
        INSERT INTO participant (id, shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt) VALUES
            (1, 1, 'p-owner', 1, 'emailAddress', 'alice@example.com', 'owner', 'readWrite', 'accepted', 0),
            (2, 1, 'p-bob', 2, 'emailAddress', 'bob@example.com', 'privateUser', 'readOnly', 'accepted', 0);
        """

    /// An old store of `rows` at `version` whose log is no longer pending: zone Z's counter at
    /// `changeSeq`, then `log` (the log's rows as that version wrote them).
    static func storeWithLog(upTo version: String, changeSeq: Int, _ log: String) throws -> (dir: URL, path: String) {
        try makeOldStore(
            upTo: version,
            migrator: Store.migrator(),
            sql: rows + """
                DELETE FROM shareflow_meta WHERE key = 'logPending';
                UPDATE zone SET changeSeq = \(changeSeq) WHERE id = 1;
                """ + "\n" + log
        )
    }

    /// The v7 log of `rows` as v7 wrote it (zone Z's counter at 5): no record rows named.
    static let v7Log = """
        INSERT INTO zone_change (zoneID, name, type, seq, deleted, at) VALUES
            (1, 'a', 'Note', 1, 0, 0), (1, 'b', 'Note', 2, 0, 0), (1, 'share-z', 'cloudkit.share', 3, 0, 0), (1, 'gone', 'Note', 4, 1, 0);
        INSERT INTO view_change (zoneID, viewerID, name, type, seq, deleted, at) VALUES
            (1, 2, 'a', 'Note', 1, 0, 0), (1, 2, 'b', 'Note', 5, 0, 0), (1, 2, 'share-z', 'cloudkit.share', 3, 0, 0);
        INSERT INTO feed (id, accountID, container, environment, scope, seq, keptFrom) VALUES (1, 2, 'iCloud.t', 'development', 'shared', 1, 0);
        INSERT INTO feed_change (feedID, zoneName, ownerName, seq, deleted, reason, at) VALUES (1, 'Z', '_alice', 1, 0, NULL, 0);
        """

    /// What Alice (the owner) and Bob (invited to share-z) read of zone Z from the start, on
    /// the store at `path`; their containers, to go on with.
    static func firstReads(
        _ path: String
    ) throws -> (zone: RecordZoneID, alice: Container, bob: Container, owner: RecordZoneChanges, viewer: RecordZoneChanges) {
        let engine = Engine(store: try Store(path: path))
        let zone = RecordZoneID(zoneName: "Z", ownerName: "_alice")
        let alice = try engine.session(for: "alice@example.com").container("iCloud.t")
        let bob = try engine.session(for: "bob@example.com").container("iCloud.t")
        return (zone, alice, bob, try alice.privateCloudDatabase.recordZoneChanges(zone), try bob.sharedCloudDatabase.recordZoneChanges(zone))
    }

    private func feeds(_ path: String) throws -> (owner: [String], viewer: [String], viewerZones: [String]) {
        let (_, _, bob, owner, viewer) = try Self.firstReads(path)
        XCTAssertEqual(viewer.modifications.first { $0.recordID.recordName == "b" }?["title"], .string("B"), "each record read whole")
        XCTAssertEqual(viewer.modifications.first { $0.recordID.recordName == "b" }?.parent?.recordName, "a")
        return (
            owner.modifications.map(\.recordID.recordName).sorted(), viewer.modifications.map(\.recordID.recordName).sorted(),
            try bob.sharedCloudDatabase.databaseChanges().changedZoneIDs.map(\.zoneName)
        )
    }

    func testAStoreFromBeforeTheLogStartsItsFeedsFromItsContents() throws {
        let (dir, path) = try makeOldStore(upTo: "v6", migrator: Store.migrator(), sql: ChangeLogMigrationTests.rows)
        defer { try? FileManager.default.removeItem(at: dir) }
        let found = try feeds(path)
        XCTAssertEqual(found.owner, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewer, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewerZones, ["Z"])
        let store = try Store(path: path)
        XCTAssertEqual(try store.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM view_change WHERE recordID IS NULL") }, 0)
        XCTAssertNil(try store.read { try String.fetchOne($0.db, sql: "SELECT value FROM shareflow_meta WHERE key = 'logPending'") })
        XCTAssertEqual(try store.check().problems, [])
    }

    func testAStoreWithTheV7LogKeepsItAndNamesEachEntrysRecord() throws {
        let (dir, path) = try Self.storeWithLog(upTo: "v7", changeSeq: 5, Self.v7Log)
        defer { try? FileManager.default.removeItem(at: dir) }
        let found = try feeds(path)
        XCTAssertEqual(found.owner, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewer, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewerZones, ["Z"])
        let store = try Store(path: path)
        let rows = try store.read { try Row.fetchAll($0.db, sql: "SELECT name, recordID, seq FROM view_change ORDER BY seq") }
        XCTAssertEqual(rows.map { $0[0] as String }, ["a", "share-z", "b"], "positions kept, nothing logged again")
        XCTAssertEqual(rows.map { $0[1] as Int64? }, [1, 3, 2])
        // v9: the owner's live entries are their records' positions; only the tombstone stays.
        let records = try store.read { try Row.fetchAll($0.db, sql: "SELECT name, seq FROM record ORDER BY name") }
        XCTAssertEqual(records.map { "\($0[0] as String)@\($0[1] as Int64)" }, ["a@1", "b@2", "share-z@3"])
        XCTAssertEqual(try store.read { try String.fetchAll($0.db, sql: "SELECT name FROM zone_change") }, ["gone"])
        XCTAssertEqual(try store.read { try $0.fetchInteger("SELECT changeSeq FROM zone WHERE id = 1") }, 5)
        XCTAssertEqual(try store.check().problems, [])
    }

    /// An entry naming no record row (or a row that is no longer its record) still finds its
    /// record by name: the row is a shortcut, never the truth.
    func testAnEntryWithoutItsRecordsRowIsReadByName() throws {
        let (dir, path) = try makeOldStore(upTo: "v6", migrator: Store.migrator(), sql: ChangeLogMigrationTests.rows)
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try feeds(path)
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "UPDATE view_change SET recordID = NULL WHERE name = 'a'") }
        try queue.close()
        let found = try feeds(path)
        XCTAssertEqual(found.owner, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewer, ["a", "b", "share-z"])
    }

    /// An entry naming a row that is another record (a row another program rewrote, or
    /// reused) is read by name too: never reported as a deletion of a record that exists.
    func testAnEntryNamingAnotherRecordsRowIsReadByName() throws {
        let (dir, path) = try makeOldStore(upTo: "v6", migrator: Store.migrator(), sql: ChangeLogMigrationTests.rows)
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try feeds(path)
        let queue = try DatabaseQueue(path: path)
        try queue.write {
            try $0.execute(sql: "UPDATE view_change SET recordID = 2 WHERE name = 'a'; UPDATE view_change SET recordID = 999 WHERE name = 'b'")
        }
        try queue.close()
        let found = try feeds(path)
        XCTAssertEqual(found.owner, ["a", "b", "share-z"])
        XCTAssertEqual(found.viewer, ["a", "b", "share-z"])
    }

    /// A v8 store (owner's entries in `zone_change`) moves each live entry's position to its
    /// record; a record of a private zone the log never had (another program wrote it) is
    /// placed after the zone's last position, so a first sync still sends it, and the counter
    /// moves past it; a public zone's records stay at 0 (public zones have no feed).
    func testAV8StoresOwnerEntriesBecomeTheirRecordsPositions() throws {
        let (dir, path) = try Self.storeWithLog(
            upTo: "v8",
            changeSeq: 7,
            """
            INSERT INTO zone_change (zoneID, name, type, seq, deleted, at, recordID) VALUES
                (1, 'a', 'Note', 6, 0, 0, 1), (1, 'share-z', 'cloudkit.share', 2, 0, 0, 3), (1, 'gone', 'Note', 7, 1, 0, NULL);
            INSERT INTO zone (id, container, environment, scope, ownerID, name) VALUES (2, 'iCloud.t', 'development', 'public', 1, '_defaultZone');
            INSERT INTO record (id, zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt, tag, createdAt) VALUES
                (4, 2, 'pub', 'Note', '{}', NULL, 1, 1, 1, 13, 'tp', 13);
            """
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        let records = try store.read { try Row.fetchAll($0.db, sql: "SELECT name, seq FROM record ORDER BY name") }
        XCTAssertEqual(records.map { "\($0[0] as String)@\($0[1] as Int64)" }, ["a@6", "b@8", "pub@0", "share-z@2"])
        XCTAssertEqual(try store.read { try $0.fetchInteger("SELECT changeSeq FROM zone WHERE id = 1") }, 8)
        XCTAssertEqual(try store.read { try String.fetchAll($0.db, sql: "SELECT name FROM zone_change ORDER BY name") }, ["gone"])
        let engine = Engine(store: store)
        let alice = try engine.session(for: "alice@example.com").container("iCloud.t")
        let zone = RecordZoneID(zoneName: "Z", ownerName: "_alice")
        let all = try alice.privateCloudDatabase.recordZoneChanges(zone)
        XCTAssertEqual(all.modifications.map(\.recordID.recordName), ["share-z", "a", "b"], "in position order")
        XCTAssertEqual(all.deletions.map(\.0.recordName), ["gone"])
        // A save after the migration is past everything migrated.
        let record = Record(recordType: "Note", recordID: RecordID(recordName: "c", zoneID: zone))
        _ = try alice.privateCloudDatabase.modifyRecords(saving: [record], deleting: [])
        XCTAssertEqual(try alice.privateCloudDatabase.recordZoneChanges(zone, since: all.changeToken).modifications.map(\.recordID.recordName), ["c"])
        XCTAssertEqual(try store.check().problems, [])
    }

    /// A savepoint rolled back takes its feed moves and what it read of the zone with it: a
    /// save after it in the same transaction moves the database feed again (FeedBumps.forget).
    func testASavepointRolledBackForgetsItsFeedMoves() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let before = try db.databaseChanges().changeToken
        let zoneBefore = try db.currentChangeToken(w.zone.zoneID)
        let store = w.engine.store
        try store.write { tx in
            let zone = try XCTUnwrap(try tx.fetchInteger("SELECT id FROM zone WHERE name = 'Trips'"))
            let alice = try XCTUnwrap(try tx.fetchInteger("SELECT accountID FROM account_email WHERE email = 'alice@example.com'"))
            XCTAssertThrowsError(
                try store.write { inner in
                    _ = try inner.insertRecord(
                        zone: zone,
                        name: "gone",
                        type: "Note",
                        fields: try StoredFields([:]),
                        parentName: nil,
                        tag: "t1",
                        by: alice,
                        at: 1
                    )
                    throw CancellationError()
                }
            )
            _ = try tx.insertRecord(
                zone: zone,
                name: "kept",
                type: "Note",
                fields: try StoredFields([:]),
                parentName: nil,
                tag: "t2",
                by: alice,
                at: 2
            )
        }
        XCTAssertEqual(
            try db.databaseChanges(since: before).changedZoneIDs.map(\.zoneName),
            ["Trips"],
            "the feed moved for the save kept, though the rolled-back one had moved it first"
        )
        XCTAssertEqual(try db.recordZoneChanges(w.zone.zoneID, since: zoneBefore).modifications.map(\.recordID.recordName), ["kept"])
        // The position the rolled-back save took is a hole, never handed out again: the zone's
        // counter, written once at commit, is the kept record's.
        let (counter, kept) = try store.read { tx in
            (
                try tx.fetchInteger("SELECT changeSeq FROM zone WHERE name = 'Trips'"),
                try tx.fetchInteger("SELECT seq FROM record WHERE name = 'kept'")
            )
        }
        XCTAssertEqual(counter, kept)
        XCTAssertEqual(try store.check().problems, [])
    }

    /// Inside a write, the positions it has taken count before they are stored: a read made
    /// in the transaction (a nested engine call's) sees the zone's counter past its records.
    func testAReadInsideAWriteSeesThePositionsItTook() throws {
        let w = try World()
        let store = w.engine.store
        try store.write { tx in
            let zone = try XCTUnwrap(try tx.fetchInteger("SELECT id FROM zone WHERE name = 'Trips'"))
            let alice = try XCTUnwrap(try tx.fetchInteger("SELECT accountID FROM account_email WHERE email = 'alice@example.com'"))
            for name in ["one", "two"] {
                _ = try tx.insertRecord(
                    zone: zone,
                    name: name,
                    type: "Note",
                    fields: try StoredFields([:]),
                    parentName: nil,
                    tag: "t",
                    by: alice,
                    at: 1
                )
            }
            let seq = try XCTUnwrap(try tx.fetchInteger("SELECT seq FROM record WHERE name = 'two'"))
            XCTAssertEqual(try tx.zoneLogBounds(zone: zone)?.current, seq)
            XCTAssertEqual(try store.read { try $0.zoneLogBounds(zone: zone)?.current }, seq)
            XCTAssertEqual(try tx.fetchInteger("SELECT changeSeq FROM zone WHERE id = ?", [zone]), seq - 2, "stored at commit")
        }
        XCTAssertEqual(
            try store.read { try $0.fetchInteger("SELECT changeSeq FROM zone WHERE name = 'Trips'") },
            try store.read { try $0.fetchInteger("SELECT MAX(seq) FROM record") }
        )
    }

    /// A name deleted and made again: the owner's feed sends the record, once, at its later
    /// position — not the tombstone before it — to a reader from before the deletion, and the
    /// record to one from between.
    func testANameMadeAgainIsSentAsItsRecordNotItsTombstone() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        _ = try db.modifyRecords(saving: [w.trip], deleting: [])
        let start = try db.currentChangeToken(w.zone.zoneID)
        _ = try db.modifyRecords(saving: [], deleting: [w.trip.recordID])
        let between = try db.currentChangeToken(w.zone.zoneID)
        XCTAssertEqual(try db.recordZoneChanges(w.zone.zoneID, since: start).deletions.map(\.0.recordName), ["lisbon"])
        let again = Record(recordType: "Trip", recordID: w.trip.recordID, fields: ["title": .string("Lisbon again")])
        _ = try db.modifyRecords(saving: [again], deleting: [])
        for token in [nil, start, between] {
            let changes = try db.recordZoneChanges(w.zone.zoneID, since: token)
            XCTAssertEqual(changes.modifications.map(\.recordID.recordName), ["lisbon"])
            XCTAssertEqual(changes.modifications.first?["title"], .string("Lisbon again"))
            XCTAssertEqual(changes.deletions.count, 0)
        }
        // Paged one at a time, the same: the tombstone is passed over, not sent as an empty page.
        var pages: [[String]] = []
        var token: String? = start
        var more = true
        while more {
            let page = try db.recordZoneChanges(w.zone.zoneID, since: token, resultsLimit: 1)
            pages.append(page.modifications.map(\.recordID.recordName) + page.deletions.map { "-" + $0.0.recordName })
            (token, more) = (page.changeToken, page.moreComing)
        }
        XCTAssertEqual(pages.flatMap { $0 }, ["lisbon"])
    }

    /// A v8 store whose owner's log holds a live entry for a record gone (another program
    /// deleted it), and whose zone counter is below its entries' positions: after v9, a
    /// reader from before the entry is told of the deletion, no position is used twice, and
    /// a save is past every entry.
    func testAV8StoreWithEntriesBeyondItsCounterAndAnEntryWithoutItsRecord() throws {
        let (dir, path) = try Self.storeWithLog(
            upTo: "v8",
            changeSeq: 1,
            """
            INSERT INTO zone_change (zoneID, name, type, seq, deleted, at, recordID) VALUES
                (1, 'a', 'Note', 2, 0, 0, 1), (1, 'vanished', 'Note', 3, 0, 0, 99), (1, 'gone', 'Note', 9, 1, 0, NULL);
            """
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        try assertPositionsSound(store, "migrated")
        let engine = Engine(store: store)
        let alice = try engine.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let zone = RecordZoneID(zoneName: "Z", ownerName: "_alice")
        let key = try store.read { try $0.changeTokenKey() }
        let early = ChangeToken(kind: .zone, environment: .development, scope: .private, target: 1, viewer: 1, seq: 2).encoded(key: key)
        let fromEarly = try alice.recordZoneChanges(zone, since: early)
        XCTAssertTrue(fromEarly.deletions.map(\.0.recordName).contains("vanished"), "a reader who was sent 'vanished' is told it is gone")
        let all = try alice.recordZoneChanges(zone)
        _ = try alice.modifyRecords(saving: [ShareFlow.Record(recordType: "Note", recordID: RecordID(recordName: "c", zoneID: zone))])
        XCTAssertEqual(
            try alice.recordZoneChanges(zone, since: all.changeToken).modifications.map(\.recordID.recordName),
            ["c"],
            "a save after the migration is past every migrated entry"
        )
        try assertPositionsSound(store, "after a save")
    }
}

extension ChangeLogMigrationTests: FeedChecks {}
