import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §11 as an operator meets a damaged store: a row another program left of the wrong
/// type makes `run` exit 1 with one clear line naming the table, row and column (never a
/// crash), every other row still serves, `serve` answers that item's error and goes on, and
/// `store check` lists each problem.
final class DamagedStoreCommandTests: XCTestCase {
    private var dir: URL!
    private var store: String!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        store = dir.appendingPathComponent("store.sqlite").path
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("alice@example.com"):container(arg[1] or "iCloud.com.example.trips")
            local db = c.privateCloudDatabase
            local zone = db:saveZone("Trips")
            local trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = zone, fields = { title = "Lisbon" } }
            local day = sf.Record{ recordType = "Day", recordName = "day1", zone = zone, parent = trip }
            local share = sf.Share{ rootRecord = trip, title = "Lisbon trip" }
            share:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            assert(not select(2, db:modifyRecords{ save = { trip, day, share } }))
            print(share.recordID.recordName)
            """,
            to: dir.appendingPathComponent("setup.lua")
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local db = sf.as("alice@example.com"):container("iCloud.com.example.trips").privateCloudDatabase
            local r = assert(db:fetchRecord(sf.RecordID{ recordName = arg[1], zoneID = db:saveZone("Trips").zoneID }))
            print(r.recordType)
            """,
            to: dir.appendingPathComponent("read.lua")
        )
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// Makes the store; returns the share's record name.
    @discardableResult
    private func setUpStore(container: String? = nil) throws -> String {
        let r = try CLI.run(["run", "--store", store, dir.appendingPathComponent("setup.lua").path] + (container.map { [$0] } ?? []))
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `sql` on the store through Python's sqlite3, as another program would.
    private func damage(_ sql: String) throws {
        XCTAssertEqual(try Tools.sqlite(store, sql), 0, "python3 sqlite3 ran \(sql)")
    }

    private func read(_ name: String) throws -> CLI.Result {
        try CLI.run(["run", "--store", store, dir.appendingPathComponent("read.lua").path, name])
    }

    /// Exit 1 with a message (no signal: a trap ends a process with SIGILL or SIGTRAP, which
    /// `terminationStatus` reports as 4 or 5), its first line naming `expected`.
    private func assertFailsCleanly(_ r: CLI.Result, _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 1, r.stderr, file: file, line: line)
        XCTAssertFalse(r.stderr.contains("Fatal error"), r.stderr, file: file, line: line)
        let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(first.hasPrefix("shareflow: "), first, file: file, line: line)
        XCTAssertTrue(first.contains(expected), "\(first) should name \(expected)", file: file, line: line)
        XCTAssertFalse(first.contains("SELECT"), first, file: file, line: line)
    }

    func testRunFailsCleanlyOnADamagedRowAndReadsTheOthers() throws {
        let shareName = try setUpStore()
        XCTAssertEqual(try read("lisbon").stdout, "Trip\n")
        XCTAssertEqual(try read(shareName).stdout, "cloudkit.share\n")
        try damage("UPDATE record SET fields = x'00ff' WHERE name = 'lisbon'")
        assertFailsCleanly(
            try read("lisbon"),
            "store \(store!): damaged row: table record row 1 column fields: expected TEXT (JSON), found BLOB (2 bytes)"
        )
        let day = try read("day1")
        XCTAssertEqual(day.status, 0, day.stderr)
        XCTAssertEqual(day.stdout, "Day\n")

        try damage("UPDATE record SET fields = '{}', modifiedAt = 'noon' WHERE name = 'lisbon'")
        assertFailsCleanly(try read("lisbon"), "table record row 1 column modifiedAt: expected REAL, found TEXT 'noon'")
        try damage("UPDATE record SET modifiedAt = 0, tag = x'01' WHERE name = 'lisbon'")
        assertFailsCleanly(try read("lisbon"), "table record row 1 column tag: expected TEXT, found BLOB (1 byte)")
        try damage("UPDATE record SET tag = 'abc', fields = '[1]' WHERE name = 'lisbon'")
        assertFailsCleanly(try read("lisbon"), "table record row 1 column fields: expected a JSON object of fields, found a JSON array")
        try damage("UPDATE record SET fields = '{\"title\": {\"s\": \"Lis' WHERE name = 'lisbon'")
        assertFailsCleanly(try read("lisbon"), "column fields: expected a JSON object of fields, found invalid JSON")
        // A damaged participant fails the share's record, not the records it shares.
        try damage("UPDATE record SET fields = '{}' WHERE name = 'lisbon'; UPDATE participant SET role = x'00' WHERE lookupValue = 'bob@example.com'")
        XCTAssertEqual(try read("lisbon").stdout, "Trip\n")
        assertFailsCleanly(try read(shareName), "table participant row 2 column role: expected TEXT, found BLOB (1 byte)")

        // --json: one object with the error's code and message.
        let json = try CLI.run(["run", "--json", "--store", store, dir.appendingPathComponent("read.lua").path, shareName])
        XCTAssertEqual(json.status, 1)
        XCTAssertTrue(json.stdout.contains("damaged row: table participant row 2 column role"), json.stdout + json.stderr)
    }

    func testStoreCheckListsEveryProblemAndAHealthyStoreIsOK() throws {
        try setUpStore()
        let healthy = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(healthy.status, 0, healthy.stdout + healthy.stderr)
        XCTAssertEqual(healthy.stdout, "store \(store!): ok\n")

        try damage(
            """
            UPDATE record SET fields = x'7b7d' WHERE name = 'lisbon';
            UPDATE record SET modifiedAt = 'soon' WHERE name = 'day1';
            UPDATE participant SET role = x'00' WHERE lookupValue = 'bob@example.com';
            UPDATE account SET discoverability = 'maybe' WHERE id = 2;
            \(StoreDamage.foreignSchemaObjects)
            UPDATE record SET parentName = 'day1' WHERE name = 'lisbon';
            """
        )
        let r = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertFalse(r.stderr.contains("Fatal error"), r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let expected = [
            "  view everything is not ShareFlow's: its schema makes no such object; drop it",
            "  trigger evil on table share is not ShareFlow's: its schema makes no such object; drop it",
            "  index record_type on table record is not ShareFlow's: its schema makes no such object; drop it",
            "  damaged row: table account row 2 column discoverability: expected one of initialState, granted, denied, couldNotComplete, found TEXT 'maybe'",
            "  damaged row: table record row 1 column fields: expected TEXT (JSON), found BLOB (2 bytes)",
            "  damaged row: table record row 2 column modifiedAt: expected REAL, found TEXT 'soon'",
            "  damaged row: table participant row 2 column role: expected TEXT, found BLOB (1 byte)",
            "  records day1 → lisbon → day1 in zone Trips (row 1) form a parent cycle (R25)",
        ]
        XCTAssertEqual(lines, ["store \(store!): \(expected.count) problem(s)"] + expected, r.stdout)

        let json = try CLI.run(["store", "check", "--json", "--store", store])
        XCTAssertEqual(json.status, 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        XCTAssertEqual((object?["problems"] as? [String])?.count, expected.count, json.stdout)

        // The planted trigger is still only reported: the check changes nothing.
        let again = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(again.stdout, r.stdout)
    }

    /// `serve` reads through the same store: the damaged record is that item's error, the
    /// other record of the same request is served, and the server keeps running. The client
    /// reads a generic reason and an incident ID, never the store's path nor the row; the
    /// server's log has both under that ID.
    func testServeAnswersADamagedRecordAsItsItemsErrorAndGoesOn() throws {
        try setUpStore(container: "iCloud.test")
        try damage("UPDATE record SET fields = x'00' WHERE name = 'lisbon'")
        let server = ServerHarness(dir: dir, store: store)
        try server.start()
        defer { server.stop() }
        let zone = #""zoneID":{"zoneName":"Trips"}"#
        for _ in 0..<2 {
            let (status, body) = try server.call(
                "POST",
                "/private/records/lookup",
                body: #"{\#(zone),"records":[{"recordName":"lisbon"},{"recordName":"day1"}]}"#
            )
            XCTAssertEqual(status, 200, "\(body)")
            let records = body["records"] as? [[String: Any]]
            XCTAssertEqual(records?.count, 2, "\(body)")
            XCTAssertEqual(records?.first?["serverErrorCode"] as? String, "TRY_AGAIN_LATER", "\(body)")
            let reason = records?.first?["reason"] as? String ?? ""
            XCTAssertFalse(reason.contains(dir.path) || reason.contains("damaged row") || reason.contains("sqlite"), reason)
            let incident = try XCTUnwrap(reason.range(of: #"incident [0-9a-f-]{36}"#, options: .regularExpression).map { String(reason[$0]) }, reason)
            let log = try server.log()
            XCTAssertTrue(
                log.split(separator: "\n").contains {
                    $0.contains(incident) && $0.contains("damaged row: table record row 1 column fields: expected TEXT (JSON), found BLOB (1 byte)")
                },
                log
            )
            XCTAssertEqual(records?.last?["recordType"] as? String, "Day", "\(body)")
        }
        XCTAssertTrue(server.isRunning, "the server goes on")
    }

    /// A busy store is an outage of the request, not a verdict on its items, and never names
    /// the store: while another process holds SQLite's write lock past the busy timeout, a
    /// modify is 503 TRY_AGAIN_LATER with retryAfter (clients retry it; a per-item error they
    /// take as final), its reason generic with an incident ID that the server's log holds
    /// with the path.
    func testABusyStoreIsTheRequestsOutageAndNamesNothingOfTheOperators() throws {
        try setUpStore(container: "iCloud.test")
        let server = ServerHarness(dir: dir, store: store)
        try server.start()
        defer { server.stop() }
        let holder = try WriteLockHolder(store: store)
        defer { holder.releaseLock() }
        let (status, body) = try server.call(
            "POST",
            "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[{"operationType":"create","record":{"recordName":"new","recordType":"Day"}}]}
                """
        )
        XCTAssertEqual(status, 503, "\(body)")
        XCTAssertEqual(body["serverErrorCode"] as? String, "TRY_AGAIN_LATER", "\(body)")
        XCTAssertNotNil(body["retryAfter"], "\(body)")
        let reason = body["reason"] as? String ?? ""
        XCTAssertFalse(reason.contains(dir.path) || reason.contains("sqlite") || reason.contains("busy"), reason)
        let incident = try XCTUnwrap(reason.range(of: #"incident [0-9a-f-]{36}"#, options: .regularExpression).map { String(reason[$0]) }, reason)
        let log = try server.log()
        XCTAssertTrue(log.split(separator: "\n").contains { $0.contains(incident) && $0.contains(store) && $0.contains("is busy") }, log)
    }

    /// Attack review: a far-off `modifiedAt` (1e300 s) trapped the server converting it to
    /// milliseconds; now the record is served with the number as it is.
    func testServeAnswersARecordWithAFarOffDate() throws {
        try setUpStore(container: "iCloud.test")
        try damage(
            "UPDATE record SET modifiedAt = 1e300 WHERE name = 'day1'; UPDATE record SET modifiedAt = -9223372036854775807 WHERE name = 'lisbon'"
        )
        let server = ServerHarness(dir: dir, store: store)
        try server.start()
        defer { server.stop() }
        let (status, body) = try server.call(
            "POST",
            "/private/records/lookup",
            body: #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"lisbon"},{"recordName":"day1"}]}"#
        )
        XCTAssertEqual(status, 200, "\(body)")
        let records = body["records"] as? [[String: Any]] ?? []
        XCTAssertEqual(records.map { $0["recordName"] as? String }, ["lisbon", "day1"], "\(body)")
        XCTAssertNotNil((records.last?["modified"] as? [String: Any])?["timestamp"], "\(body)")
        XCTAssertTrue(server.isRunning, "the server goes on")
    }

    /// Attack review: SQLite's own messages ("no such column: p.addedAt") reached the operator
    /// and clients; now the store's failure is said in ShareFlow's words.
    func testAChangedSchemaIsSaidWithoutSQLiteNames() throws {
        let share = try setUpStore()
        try damage("ALTER TABLE participant RENAME COLUMN permission TO perm")
        try CLI.write(
            """
            local sf = require("shareflow")
            local c = sf.as("alice@example.com"):container("iCloud.com.example.trips")
            local zone = c.privateCloudDatabase:saveZone("Trips")
            local s = assert(c.privateCloudDatabase:fetchRecord(sf.RecordID{ recordName = arg[1], zoneID = zone.zoneID }))
            print(#s.participants)
            """,
            to: dir.appendingPathComponent("share.lua")
        )
        let r = try CLI.run(["run", "--store", store, dir.appendingPathComponent("share.lua").path, share])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertFalse(r.stderr.contains("no such column") || r.stderr.contains("permission"), r.stderr)
        XCTAssertTrue(r.stderr.contains("schema this shareflow expects"), r.stderr)
        let check = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertFalse(check.stdout.contains("no such column"), check.stdout)
    }

    /// Attack review: a store whose migration record is missing (or behind its own version)
    /// was taken for one another process was making: ten seconds of retries, then SQLite's
    /// error, and the file changed. Now it is refused at once and left as it was.
    func testAStoreWithoutItsMigrationRecordIsRefusedAtOnceUnchanged() throws {
        try setUpStore()
        for sql in [
            "DROP TABLE grdb_migrations", "DELETE FROM grdb_migrations WHERE identifier = 'v4'",
            "UPDATE shareflow_meta SET value = 'abc' WHERE key = 'schemaVersion'",
        ] {
            let copy = dir.appendingPathComponent("copy-\(UUID().uuidString).sqlite").path
            try FileManager.default.copyItem(atPath: store, toPath: copy)
            try Tools.sqlite(copy, sql + "; PRAGMA journal_mode=DELETE;")
            let before = try Data(contentsOf: URL(fileURLWithPath: copy))
            let started = Date()
            let r = try CLI.run(["store", "info", "--store", copy])
            XCTAssertLessThan(Date().timeIntervalSince(started), 5, sql)
            XCTAssertEqual(r.status, 1, "\(sql): \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("it is damaged"), "\(sql): \(r.stderr)")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: copy)), before, "\(sql): the file was changed")
        }
    }
}

/// A `shareflow serve` over a given store, with an API token and Alice's web auth token.
private final class ServerHarness {
    let dir: URL
    let store: String
    private var server: ServeProcess?
    private var api = "", web = ""

    init(dir: URL, store: String) {
        self.dir = dir
        self.store = store
    }

    var isRunning: Bool { server?.isRunning == true }

    func start() throws {
        api = try CLI.run(["tokens", "api", "--store", store, "--container", "iCloud.test"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        web = try CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", "alice@example.com"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        server = try ServeProcess(store: store, in: dir)
    }

    func stop() { server?.stop() }

    /// What the server wrote so far (its access log and errors).
    func log() throws -> String {
        guard let server else { return "" }
        return try String(contentsOf: server.log, encoding: .utf8)
    }

    /// One request to the private database of iCloud.test, by curl: the status and the JSON body.
    func call(_ method: String, _ path: String, body: String) throws -> (Int, [String: Any]) {
        let base = server?.base ?? ""
        return try Tools.curl(
            method,
            base + "/database/1/iCloud.test/development" + path + "?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
            body: body,
            in: dir
        )
    }
}
