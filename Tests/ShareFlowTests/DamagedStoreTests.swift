import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// SPEC §11: a row of the wrong type or shape, as another program or a disk fault leaves it,
/// never traps: reading it fails with `serviceUnavailable` naming the store, table, row and
/// column, every other row keeps serving, and `Store.check()` lists it — with schema objects
/// ShareFlow did not make and parent cycles.
class DamagedStoreTests: XCTestCase {
    /// A store file with the World in it (trip, day and a share of the trip with Bob on it), its
    /// path, and the engine over it.
    private struct Fixture {
        let dir: URL
        let path: String
        let world: World
        let share: Share
        var engine: Engine { world.engine }
        var db: CloudDatabase { world.c.privateCloudDatabase }

        init() throws {
            dir = try makeTemporaryFolder("sf-damaged")
            path = dir.appendingPathComponent("store.sqlite").path
            world = try World(engine: Engine(store: Store(path: path)))
            share = try world.share(["bob@example.com"])
        }

        /// Runs `sql` through a connection of its own, as another program would.
        func damage(_ sql: String) throws {
            var config = Configuration()
            config.foreignKeysEnabled = false
            let other = try DatabaseQueue(path: path, configuration: config)
            try other.writeWithoutTransaction { try $0.execute(sql: sql) }
            try other.close()
        }

        /// Rewrites a table's declared SQL (`sqlite_master`), as a program that rebuilt the
        /// table without ShareFlow's types or NOT NULLs would leave it.
        func redeclare(_ table: String, replacing old: String, with new: String) throws {
            let other = try DatabaseQueue(path: path)
            try other.writeWithoutTransaction { db in
                let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
                try db.execute(sql: "PRAGMA writable_schema = ON")
                try db.execute(
                    sql: "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = ?",
                    arguments: [old, new, table]
                )
                try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
                try db.execute(sql: "PRAGMA writable_schema = OFF")
            }
            try other.close()
        }

        func rowID(_ table: String, _ condition: String) throws -> Int64 {
            try engine.store.read { try $0.fetchInteger("SELECT id FROM \(table) WHERE \(condition)")! }
        }

        func remove() { try? FileManager.default.removeItem(at: dir) }
    }

    /// The error of reading a damaged value: the store's, naming the table, row and column,
    /// and never SQL.
    private func assertDamaged(
        _ expression: @autoclosure () throws -> some Any,
        _ f: Fixture,
        table: String,
        row: Int64,
        column: String,
        found: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            guard let e = error as? ShareFlowError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(e.code, .serviceUnavailable, e.message, file: file, line: line)
            XCTAssertTrue(
                e.message.hasPrefix("store \(f.path): damaged row: table \(table) row \(row) column \(column): "),
                e.message,
                file: file,
                line: line
            )
            XCTAssertTrue(e.message.contains(found), "\(e.message) should say \(found)", file: file, line: line)
            XCTAssertFalse(e.message.contains("SELECT"), e.message, file: file, line: line)
        }
    }

    /// `assertDamaged` of Alice fetching `record` again, whose row `row` is damaged in `column`.
    private func assertFetchDamaged(
        _ f: Fixture,
        _ record: ShareFlow.Record,
        row: Int64,
        _ column: String,
        _ found: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        assertDamaged(try f.db.fetchRecord(record.recordID), f, table: "record", row: row, column: column, found: found, file: file, line: line)
    }

    func testABlobInFieldsFailsThatRecordAloneNamingTableRowAndColumn() throws {
        let f = try Fixture()
        defer { f.remove() }
        let trip = try f.rowID("record", "name = 'lisbon'")
        try f.damage("UPDATE record SET fields = x'00ff7b7d' WHERE id = \(trip)")
        assertFetchDamaged(f, f.world.trip, row: trip, "fields", "expected TEXT (JSON), found BLOB (4 bytes)")
        // Every other row keeps serving.
        XCTAssertEqual(try f.db.fetchRecord(f.world.day.recordID).recordType, "Day")
        XCTAssertEqual(try f.db.records(matching: Query(recordType: "Day"), inZoneWith: f.world.zone.zoneID).records.count, 1)
        // A query whose matches include it fails whole, naming it: a page without it would pass for complete.
        assertDamaged(
            try f.db.records(matching: Query(recordType: "Trip"), inZoneWith: f.world.zone.zoneID),
            f,
            table: "record",
            row: trip,
            column: "fields",
            found: "BLOB"
        )
        // The share of the record is its own row, and serves.
        XCTAssertNoThrow(try f.world.bc.fetchShareMetadataResults([f.share.url!]).0[0].1.get())
    }

    func testTextInModifiedAtABlobTagAndNullsAreEachNamed() throws {
        let f = try Fixture()
        defer { f.remove() }
        let trip = try f.rowID("record", "name = 'lisbon'")
        let day = try f.rowID("record", "name = 'day1'")
        try f.damage("UPDATE record SET modifiedAt = 'yesterday' WHERE id = \(trip)")
        assertFetchDamaged(f, f.world.trip, row: trip, "modifiedAt", "expected REAL, found TEXT 'yesterday'")
        try f.damage("UPDATE record SET modifiedAt = 0, tag = x'0102' WHERE id = \(trip)")
        assertFetchDamaged(f, f.world.trip, row: trip, "tag", "expected TEXT, found BLOB (2 bytes)")
        // NULL where a value is expected: a table another program rebuilt without NOT NULL.
        try f.redeclare("record", replacing: "NOT NULL", with: "")
        try f.damage("UPDATE record SET tag = NULL WHERE id = \(day)")
        assertFetchDamaged(f, f.world.day, row: day, "tag", "found NULL")
        try f.damage("UPDATE record SET tag = 'abc', type = NULL WHERE id = \(day)")
        assertFetchDamaged(f, f.world.day, row: day, "type", "found NULL")
        // An integer where text is expected: a column rebuilt with no type keeps an integer as one.
        try f.redeclare("record", replacing: "parentName TEXT", with: "parentName BLOB")
        try f.damage("UPDATE record SET type = 'Day', parentName = 42 WHERE id = \(day)")
        assertFetchDamaged(f, f.world.day, row: day, "parentName", "expected TEXT, found INTEGER 42")
        try f.damage("UPDATE record SET parentName = 'lisbon', tag = 'abc', modifiedAt = 1 WHERE id IN (\(trip), \(day))")
        try f.damage("UPDATE record SET tag = x'0102', parentName = NULL WHERE id = \(trip)")
        XCTAssertEqual(try f.db.fetchRecord(f.world.day.recordID).parent?.recordName, "lisbon", "the other row serves")
    }

    func testFieldsThatAreNoJSONObjectOfFieldValuesAreDamagedNotEmpty() throws {
        let f = try Fixture()
        defer { f.remove() }
        let trip = try f.rowID("record", "name = 'lisbon'")
        for (json, found) in [
            ("{\"title\": {\"s\": \"Lis", "invalid JSON"),
            ("[1, 2]", "found a JSON array"),
            ("\"text\"", "found a JSON string"),
            ("{\"title\": 5}", "found field 'title' holding no field value"),
            ("{\"title\": {\"s\": 5}}", "found field 'title' holding no field value"),
        ] {
            try f.damage("UPDATE record SET fields = '\(json.replacingOccurrences(of: "'", with: "''"))' WHERE id = \(trip)")
            assertFetchDamaged(f, f.world.trip, row: trip, "fields", found)
        }
        // Read as no fields, the next save would have dropped the record's data: it is refused too.
        let copy = Record(recordType: "Trip", recordID: f.world.trip.recordID)
        let result = try f.db.modifyRecords(saving: [copy], savePolicy: .changedKeys)
        XCTAssertEqual(result.firstError?.code, .serviceUnavailable, "\(String(describing: result.firstError))")
        XCTAssertTrue(result.firstError?.message.contains("damaged row: table record row \(trip) column fields") == true)
    }

    func testABlobRoleOrAnUnknownWordFailsTheShareAloneNamingTheParticipantRow() throws {
        let f = try Fixture()
        defer { f.remove() }
        let bob = try f.rowID("participant", "lookupValue = 'bob@example.com'")
        /// Alice's fetch of the share fails on Bob's participant row, damaged in `column`.
        func assertShareDamaged(_ column: String, _ found: String, line: UInt = #line) {
            assertDamaged(try f.db.fetchRecord(f.share.recordID), f, table: "participant", row: bob, column: column, found: found, line: line)
        }
        try f.damage("UPDATE participant SET role = x'6f776e6572' WHERE id = \(bob)")
        assertShareDamaged("role", "expected TEXT, found BLOB (5 bytes)")
        assertDamaged(
            try f.world.bc.fetchShareMetadataResults([f.share.url!]).0[0].1.get(),
            f,
            table: "participant",
            row: bob,
            column: "role",
            found: "BLOB"
        )
        try f.damage("UPDATE participant SET role = 'boss' WHERE id = \(bob)")
        assertShareDamaged("role", "expected one of owner, administrator, privateUser, publicUser, unknown, found TEXT 'boss'")
        try f.damage("UPDATE participant SET role = 'privateUser', lookupKind = 'pigeon' WHERE id = \(bob)")
        assertShareDamaged("lookupKind", "expected one of emailAddress, phoneNumber, userRecordID, found TEXT 'pigeon'")
        try f.damage("UPDATE participant SET lookupKind = 'emailAddress', accountID = 'two' WHERE id = \(bob)")
        assertShareDamaged("accountID", "expected INTEGER, found TEXT 'two'")
        // The records under the share serve all along.
        XCTAssertEqual(try f.db.fetchRecord(f.world.trip.recordID).recordType, "Trip")
    }

    func testADamagedAccountFailsWhereItIsReadAndNowhereElse() throws {
        let f = try Fixture()
        defer { f.remove() }
        let carol = try f.rowID("account", "userRecordID = '\(f.world.carol.userRecordID)'")
        try f.damage("UPDATE account SET name = '[\"Carol\"]', discoverability = x'00' WHERE id = \(carol)")
        assertDamaged(
            try f.engine.accounts.find("carol@example.com"),
            f,
            table: "account",
            row: carol,
            column: "name",
            found: "expected a JSON object of name parts, found a JSON array"
        )
        try f.damage("UPDATE account SET name = '{}' WHERE id = \(carol)")
        assertDamaged(
            try f.world.c.fetchShareParticipantResults([LookupRequest(emailAddress: "carol@example.com")]).0[0].1.get(),
            f,
            table: "account",
            row: carol,
            column: "discoverability",
            found: "BLOB"
        )
        XCTAssertEqual(try f.engine.accounts.find("bob@example.com")?.email, "bob@example.com")
        XCTAssertNoThrow(try f.world.c.fetchShareParticipantResults([LookupRequest(emailAddress: "bob@example.com")]).0[0].1.get())
    }

    func testCheckListsEveryDamagedValueForeignObjectAndParentCycle() throws {
        let f = try Fixture()
        defer { f.remove() }
        XCTAssertEqual(try f.engine.store.check().problems, [], "the World is healthy")
        XCTAssertTrue(try f.engine.store.check().isHealthy)
        let trip = try f.rowID("record", "name = 'lisbon'")
        let day = try f.rowID("record", "name = 'day1'")
        let bob = try f.rowID("participant", "lookupValue = 'bob@example.com'")
        let zone = try f.rowID("zone", "name = 'Trips'")
        try f.damage(
            """
            UPDATE record SET fields = x'7b7d' WHERE id = \(trip);
            UPDATE record SET modifiedAt = 'soon', fields = '[]' WHERE id = \(day);
            UPDATE participant SET role = x'00' WHERE id = \(bob);
            \(StoreDamage.foreignSchemaObjects)
            UPDATE record SET parentName = 'day1' WHERE id = \(trip);
            """
        )
        let check = try f.engine.store.check()
        XCTAssertFalse(check.isHealthy)
        XCTAssertEqual(check.integrity, ["ok"])
        let expected = [
            "damaged row: table record row \(trip) column fields: expected TEXT (JSON), found BLOB (2 bytes)",
            "damaged row: table record row \(day) column fields: expected a JSON object of fields, found a JSON array",
            "damaged row: table record row \(day) column modifiedAt: expected REAL, found TEXT 'soon'",
            "damaged row: table participant row \(bob) column role: expected TEXT, found BLOB (1 byte)",
            "trigger evil on table share is not ShareFlow's: its schema makes no such object; drop it",
            "view everything is not ShareFlow's: its schema makes no such object; drop it",
            "index record_type on table record is not ShareFlow's: its schema makes no such object; drop it",
            "records day1 → lisbon → day1 in zone Trips (row \(zone)) form a parent cycle (R25)",
        ]
        for line in expected { XCTAssertTrue(check.problems.contains(line), "missing \(line) in\n\(check.problems.joined(separator: "\n"))") }
        XCTAssertEqual(check.problems.count, expected.count, check.problems.joined(separator: "\n"))
    }

    /// A change logged past its zone's counter, or two of the owner's entries at one position
    /// (another program's writes): each would lose or repeat a change in a feed.
    func testCheckNamesLogPositionsPastTheCounterOrTaken() throws {
        let f = try Fixture()
        defer { f.remove() }
        XCTAssertEqual(try f.engine.store.check().problems, [])
        let zone = try f.rowID("zone", "name = 'Trips'")
        let counter = try f.engine.store.read { try $0.fetchInteger("SELECT changeSeq FROM zone WHERE id = \(zone)")! }
        try f.damage(
            """
            UPDATE record SET seq = \(counter + 5) WHERE name = 'lisbon';
            UPDATE record SET seq = (SELECT seq FROM record WHERE name = 'lisbon') WHERE name = 'day1';
            """
        )
        let problems = try f.engine.store.check().problems
        XCTAssertEqual(
            problems,
            [
                "zone Trips (row \(zone)): a change logged at position \(counter + 5), past its counter \(counter); later changes would reuse positions",
                "zone Trips (row \(zone)): 2 changes at position \(counter + 5) of its owner's feed (one expected)",
            ]
        )
    }

    func testCheckNamesAChangedOrMissingObjectOfShareFlowsOwnAndNULLs() throws {
        let f = try Fixture()
        defer { f.remove() }
        let day = try f.rowID("record", "name = 'day1'")
        // The trigger that moves a share's change tag, replaced by one that does something else.
        try f.damage(
            """
            DROP TRIGGER participant_insert_changes_share;
            CREATE TRIGGER participant_insert_changes_share AFTER INSERT ON participant BEGIN SELECT 1; END;
            DROP INDEX participant_lookup;
            """
        )
        try f.redeclare("record", replacing: "type TEXT NOT NULL", with: "type TEXT")
        try f.damage("UPDATE record SET type = NULL WHERE id = \(day)")
        let problems = try f.engine.store.check().problems
        XCTAssertEqual(
            problems,
            [
                "trigger participant_insert_changes_share differs from the one ShareFlow's schema makes",
                "table record differs from the one ShareFlow's schema makes",
                "index participant_lookup of ShareFlow's schema is missing",
                "damaged row: table record row \(day) column type: expected TEXT, found NULL",
            ],
            problems.joined(separator: "\n")
        )
    }

    /// The engine's walks up a parent chain end on a cycle another program left.
    func testAParentCycleNeverHangsTheEngine() throws {
        let f = try Fixture()
        defer { f.remove() }
        try f.damage("UPDATE record SET parentName = 'day1' WHERE name = 'lisbon'")
        XCTAssertEqual(try f.db.fetchRecord(f.world.day.recordID).parent?.recordName, "lisbon")
        let share = try f.world.accept(f.share.url!, in: f.world.bc)
        XCTAssertNotNil(share.currentUserParticipant)
        let shared = f.world.bc.sharedCloudDatabase
        XCTAssertEqual(try shared.records(matching: Query(recordType: "Day"), inZoneWith: f.world.zone.zoneID).records.count, 1)
        let child = Record(recordType: "Note", recordID: RecordID(recordName: "n1", zoneID: f.world.zone.zoneID), parent: f.world.day.recordID)
        XCTAssertNil(try f.db.modifyRecords(saving: [child]).error)
    }

    /// `store check` reads each table through the catalogue: every table of the schema the
    /// migrations make is there, every column in order, and every table but the rate buckets
    /// (state a crash may lose) is read.
    func testTheCheckReadsEveryColumnOfEveryTable() throws {
        let store = try Store(path: ":memory:")
        let tables = try store.read { tx in
            try String.fetchAll(
                tx.db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name != 'grdb_migrations' ORDER BY name"
            )
        }
        XCTAssertEqual(tables, StoreCatalogue.current.tables.map(\.name).sorted())
        XCTAssertEqual(Set(tables).subtracting(StoreCatalogue.current.storedTables.map(\.name)), ["rate_bucket"])
        for table in StoreCatalogue.current.storedTables {
            let columns = try store.read { tx in try Row.fetchAll(tx.db, sql: "PRAGMA table_info(\(table.name))").map { $0["name"] as String } }
            XCTAssertEqual(columns, table.columns.map(\.name), table.name)
        }
    }

    /// A check never dies, whatever a row holds.
    func testCheckReadsEveryKindOfValueInEveryColumnWithoutTrapping() throws {
        let f = try Fixture()
        defer { f.remove() }
        for table in StoreCatalogue.current.storedTables {
            try f.redeclare(table.name, replacing: "NOT NULL", with: "")
        }
        let values = ["NULL", "x'ff00'", "'text'", "42", "1.5", "'{'", "'[]'"]
        for (n, value) in values.enumerated() {
            for table in StoreCatalogue.current.storedTables {
                for column in table.columns where column.name != table.key && column.name != "id" {
                    try? f.damage("UPDATE \(table.name) SET \(column.name) = \(value) WHERE rowid = (SELECT min(rowid) FROM \(table.name))")
                }
            }
            let check = try f.engine.store.check()
            XCTAssertFalse(check.isHealthy, "round \(n)")
            XCTAssertFalse(check.problems.isEmpty, "round \(n)")
        }
    }
}
