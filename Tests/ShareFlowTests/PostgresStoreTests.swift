import Foundation
import GRDB
import Logging
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// The PostgreSQL store's own parts (SPEC §16): the URL, the dialect's rewrites (always), and,
/// when the suite runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES), the session's settings, the
/// schema's guard against another program's tables, and failures as one clear line.
class PostgresStoreTests: XCTestCase {
    func testTheURLIsReadAsTheSpecWritesIt() throws {
        let full = try PostgresLocation("postgres://app:s%40cret@db.example.com:6543/shareflow?sslmode=require")
        XCTAssertEqual(full.user, "app")
        XCTAssertEqual(full.password, "s@cret")
        XCTAssertEqual(full.host, "db.example.com")
        XCTAssertEqual(full.port, 6543)
        XCTAssertEqual(full.database, "shareflow")
        XCTAssertTrue(full.requiresTLS)
        XCTAssertEqual(full.label, "postgres://app@db.example.com:6543/shareflow", "never the password")
        let short = try PostgresLocation("postgresql://app@localhost/db")
        XCTAssertEqual(short.port, 5432)
        XCTAssertFalse(short.requiresTLS)
        for (bad, why) in [
            ("postgres://localhost/db", "names no user"), ("postgres://app@localhost/", "names no database"),
            ("postgres://app@localhost/db?sslmode=verify-full", "sslmode must be disable or require"),
            ("postgres://app@localhost/db?timeout=3", "unknown parameter timeout"),
            ("postgres://app:pw@localhost:99999/db", ""),
        ] {
            XCTAssertThrowsError(try PostgresLocation(bad), bad) { error in
                let text = "\(error)"
                XCTAssertTrue(why.isEmpty || text.contains(why), text)
                XCTAssertFalse(text.contains("pw@"), "the password is never shown: \(text)")
            }
        }
    }

    func testTheDialectRewritesOnlyWhatPostgreSQLSpellsOtherwise() {
        let cases: [(String, String)] = [
            ("SELECT a FROM t WHERE x = ? AND y = ?", "SELECT a FROM t WHERE x = $1 AND y = $2"),
            ("WHERE a = ?1 OR b = ?1 AND c > ?", "WHERE a = $1 OR b = $1 AND c > $2"),
            ("SELECT '?' , \"a?\" FROM t WHERE x = ?", "SELECT '?' , \"a?\" FROM t WHERE x = $1"),
            ("SELECT MAX(seq) FROM t", "SELECT MAX(seq) FROM t"),
            ("SELECT MAX(a, COALESCE((SELECT MAX(b) FROM t), 0))", "SELECT GREATEST(a, COALESCE((SELECT MAX(b) FROM t), 0))"),
            ("SELECT MIN(a, b), MIN(c)", "SELECT LEAST(a, b), MIN(c)"),
            ("FROM share s CROSS JOIN participant p ON p.shareID = s.id", "FROM share s JOIN participant p ON p.shareID = s.id"),
            ("ON l.deleted = 0 AND +r.zoneID = l.zoneID AND +r.name = l.name", "ON l.deleted = 0 AND r.zoneID = l.zoneID AND r.name = l.name"),
            ("SET seq = seq + 1, n = up.depth + 1", "SET seq = seq + 1, n = up.depth + 1"),
            ("SELECT 'it''s ?' WHERE a = ?", "SELECT 'it''s ?' WHERE a = $1"),
        ]
        for (sqlite, postgres) in cases {
            XCTAssertEqual(PostgresDialect.translate(sqlite), postgres, sqlite)
        }
    }

    func testTheSessionTakesTheStatementTimeoutAndTheSchema() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url, postgres: PostgresSettings(poolSize: 2, statementTimeoutMs: 1234))
        defer { store.close() }
        let (timeout, path) = try store.read { tx in
            (try tx.texts("SHOW statement_timeout").first, try tx.texts("SHOW search_path").first)
        }
        XCTAssertEqual(timeout, "1234ms")
        XCTAssertEqual(path, "shareflow")
        // A statement past it is serviceUnavailable naming the store and the timeout, never SQL.
        XCTAssertThrowsError(try store.read { tx in try tx.rows("SELECT pg_sleep(2)") }) { error in
            let e = error as? ShareFlowError
            XCTAssertEqual(e?.code, .serviceUnavailable)
            XCTAssertTrue(e?.message.contains("statement timeout of 1234 ms") == true, "\(error)")
            XCTAssertNotNil(e?.retryAfter)
        }
        // The store still serves after it.
        XCTAssertEqual(try store.read { try $0.fetchInteger("SELECT 1") }, 1)
    }

    func testAShareflowSchemaOfAnotherProgramIsRefusedUntouched() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        do {
            let store = try Store.open(url)
            _ = try store.write { tx in
                try tx.run("DROP SCHEMA shareflow CASCADE", [])
                try tx.run("CREATE SCHEMA shareflow", [])
                try tx.run("CREATE TABLE shareflow.invoices (id BIGINT)", [])
            }
            store.close()
        }
        XCTAssertThrowsError(try Store.open(url)) { error in
            XCTAssertTrue("\(error)".contains("is not a ShareFlow store"), "\(error)")
            XCTAssertTrue("\(error)".contains("invoices"), "\(error)")
        }
    }

    // MARK: store copy (SPEC §16 M3)

    /// Every table's rows, in key order, as values: what two copies of one store must agree on.
    private func contents(_ store: Store) throws -> [String: [[DatabaseValue]]] {
        try store.read { tx in
            var out: [String: [[DatabaseValue]]] = [:]
            for table in StoreCatalogue.current.storedTables {
                let columns = table.columns.map(\.name).joined(separator: ", ")
                // Each store keeps its own schema version (PostgreSQL's runs ahead: PostgresSchema).
                let mine = table.name == "shareflow_meta" ? " WHERE key <> 'schemaVersion'" : ""
                out[table.name] = try tx.rows("SELECT \(columns) FROM \(table.name)\(mine) ORDER BY \(columns)")
            }
            return out
        }
    }

    func testACopyToPostgreSQLAndBackKeepsEveryRowAndEveryPromise() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // A store with a share accepted, a deleted record (a tombstone), a credential.
        let source = try Store(path: folder.appendingPathComponent("demo.sqlite").path)
        let world = try World(engine: Engine(store: source))
        let share = try world.share(["bob@example.com"], permission: .readWrite)
        try world.accept(share.url!, in: world.bc)
        let extra = Record(recordType: "Note", recordID: RecordID(recordName: "gone", zoneID: world.zone.zoneID))
        _ = try world.c.privateCloudDatabase.modifyRecords(saving: [extra])
        _ = try world.c.privateCloudDatabase.modifyRecords(deleting: [extra.recordID])
        try world.engine.credentials.add(.apiToken, container: World.containerID, hash: String(repeating: "ab", count: 32))
        let token = try world.c.privateCloudDatabase.currentChangeToken(world.zone.zoneID)
        let databaseToken = try world.bc.sharedCloudDatabase.currentDatabaseChangeToken()
        let tripTag = try world.c.privateCloudDatabase.fetchRecord(world.trip.recordID).recordChangeTag

        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let cluster = try Store.open(url)
        defer { cluster.close() }
        let report = try source.copy(to: cluster)
        XCTAssertEqual(report.rows["record"], 3)  // trip, day, the share
        XCTAssertEqual(report.rows["participant"], 2)
        XCTAssertEqual(report.rows["credential"], 1)
        XCTAssertEqual(try contents(cluster), try contents(source))
        XCTAssertTrue(try cluster.check().isHealthy)

        // And back, into a new file: the same rows again.
        let back = try Store(path: folder.appendingPathComponent("back.sqlite").path)
        defer { back.close() }
        _ = try cluster.copy(to: back)
        XCTAssertEqual(try contents(back), try contents(source))

        // The copy keeps the promises: the change tags, the share URL, the change tokens (the
        // same key signs them), the credential; new rows take new IDs.
        let engine = Engine(store: cluster)
        let alice = try engine.session(for: world.alice).container(World.containerID)
        let bob = try engine.session(for: world.bob).container(World.containerID)
        XCTAssertEqual(try alice.privateCloudDatabase.fetchRecord(world.trip.recordID).recordChangeTag, tripTag)
        let unchanged = try alice.privateCloudDatabase.recordZoneChanges(world.zone.zoneID, since: token)
        XCTAssertTrue(unchanged.modifications.isEmpty && unchanged.deletions.isEmpty)
        XCTAssertTrue(try bob.sharedCloudDatabase.databaseChanges(since: databaseToken).changedZoneIDs.isEmpty)
        let (metas, error) = bob.fetchShareMetadataResults([share.url!])
        XCTAssertNil(error)
        XCTAssertEqual(try metas[0].1.get().participantStatus, .accepted)
        XCTAssertNotNil(
            try engine.credentials.find(
                .apiToken,
                container: World.containerID,
                environment: .development,
                hash: String(repeating: "ab", count: 32)
            )
        )
        let later = Record(recordType: "Note", recordID: RecordID(recordName: "later", zoneID: world.zone.zoneID))
        let saved = try alice.privateCloudDatabase.modifyRecords(saving: [later])
        XCTAssertNil(saved.error)
        let changed = try alice.privateCloudDatabase.recordZoneChanges(world.zone.zoneID, since: token)
        XCTAssertEqual(changed.modifications.map(\.recordID.recordName), ["later"])

        // A destination that holds a store is refused, untouched.
        let before = try contents(cluster)
        XCTAssertThrowsError(try source.copy(to: cluster)) { error in
            XCTAssertTrue("\(error)".contains("already holds a store"), "\(error)")
        }
        XCTAssertEqual(try contents(cluster), before)
    }

    /// A connection of the test's own to `url`, in a transaction holding `decision` locked
    /// against everyone (as an operator's long statement would).
    private func lockDecisions(_ store: Store) throws -> PostgresSession {
        let locker = try XCTUnwrap(store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        try locker.command("BEGIN")
        try locker.command("LOCK TABLE decision IN ACCESS EXCLUSIVE MODE")
        return locker
    }

    /// The log's table locked by someone else: a policy that reads the log inside the
    /// request's transaction gets this node's own log, and the request goes through in about
    /// the log's timeout, not the statement timeout; the decisions are written once the lock
    /// goes.
    func testALockedDecisionTableHoldsUpNoRequest() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let engine = Engine(store: try Store.open(url))
        defer { engine.store.close() }
        let world = try World(engine: engine)
        final class Reads: @unchecked Sendable { var count = 0 }
        let reads = Reads()
        _ = engine.policies.add(.shareSave, name: "reads-the-log") { [unowned engine] _ in
            _ = engine.policies.decisions(limit: 5)
            reads.count += 1
            return .allow
        }
        let locker = try lockDecisions(engine.store)
        defer { try? locker.connection.close().wait() }
        let start = Date()
        XCTAssertNoThrow(try world.share(["bob@example.com"]))
        let took = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(reads.count, 0)
        // Each read waits for the log's connection (a write held by the lock, 1 s) and its own
        // write (1 s), never the 5 s statement timeout.
        XCTAssertLessThan(took, Double(reads.count) * 3 + 2, "\(reads.count) reads of the log")
        try locker.command("ROLLBACK")
        let logged = engine.policies.decisions(limit: 10)
        XCTAssertEqual(logged.filter { $0.point == "share.save" && $0.allow }.count, reads.count, "\(logged)")
        XCTAssertTrue(logged.allSatisfy { $0.id > 0 })
    }

    /// With the table locked, decisions wait in a bounded queue: handing one over never waits,
    /// past `capacity` newer ones are dropped, and the rest are written once the lock goes, in
    /// order, in INSERTs of at most `rowsPerInsert` rows.
    func testDecisionsWaitInABoundedQueueWhileTheTableIsLocked() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url)
        defer { store.close() }
        let locker = try lockDecisions(store)
        defer { try? locker.connection.close().wait() }
        let start = Date()
        let made = StoreDecisionLog.capacity + 50
        for n in 0..<made {
            store.driver?.decisionLog?.add(
                PolicyDecision(
                    id: 0,
                    point: "share.save",
                    policies: ["p"],
                    allow: n % 2 == 0,
                    reasons: ["#\(n)"],
                    duration: 0.001,
                    time: Date()
                )
            )
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2, "handing decisions over waited")
        try locker.command("ROLLBACK")
        let logged = try XCTUnwrap(store.driver?.decisionLog?.latest(limit: StoreDecisionLog.defaultKept))
        XCTAssertEqual(logged.count, StoreDecisionLog.capacity)
        XCTAssertEqual(logged.first?.reasons, ["#0"])
        XCTAssertEqual(logged.last?.reasons, ["#\(StoreDecisionLog.capacity - 1)"])
        XCTAssertEqual(logged.map(\.id), logged.map(\.id).sorted())
    }

    /// A COMMIT carried out whose answer is lost (the connection dropped at that moment): the
    /// node asks PostgreSQL on a new connection whether the transaction committed, and reports
    /// the write done if it did, rather than failed (a retry would meet its own account as
    /// someone else's). A transaction that wrote nothing has nothing to ask about: retry.
    func testACommitWhoseAnswerIsLostIsAskedAbout() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let engine = Engine(store: try Store.open(url))
        defer { engine.store.close() }
        defer { PostgresSession.dropNextCommitAnswer = false }
        PostgresSession.dropNextCommitAnswer = true
        let made = try engine.accounts.create(emails: ["lost@example.com"])
        XCTAssertFalse(PostgresSession.dropNextCommitAnswer, "the COMMIT's answer was dropped")
        XCTAssertEqual(try engine.accounts.create(emails: ["next@example.com"]).id, made.id + 1, "served again on a new connection")
        XCTAssertThrowsError(try engine.accounts.create(emails: ["lost@example.com"]), "it is there: a second one is refused")

        PostgresSession.dropNextCommitAnswer = true
        XCTAssertThrowsError(try engine.store.write { _ in 1 }) { error in
            XCTAssertEqual((error as? ShareFlowError)?.code, .serviceUnavailable, "\(error)")
        }
    }

    /// A process closing its store while the table is locked tries for a bounded time, then
    /// says in one line how many decisions it could not write: it neither hangs nor drops them
    /// silently.
    func testAClosingProcessSaysWhatItCouldNotWrite() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        final class Lines: @unchecked Sendable {  // guarded by lock
            let lock = NSLock()
            var all: [String] = []
        }
        struct Collect: LogHandler {
            let lines: Lines
            var logLevel: Logger.Level = .info
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) { lines.lock.withLock { lines.all.append("\(event.level): \(event.message)") } }
        }
        let lines = Lines()
        let store = try Store.open(url)
        store.driver?.decisionLog?.setLogger(Logger(label: "test") { _ in Collect(lines: lines) })
        let locker = try lockDecisions(store)
        defer { try? locker.connection.close().wait() }
        for n in 0..<50 {
            store.driver?.decisionLog?.add(
                PolicyDecision(
                    id: 0,
                    point: "share.save",
                    policies: ["p"],
                    allow: true,
                    reasons: ["#\(n)"],
                    duration: 0,
                    time: Date()
                )
            )
        }
        let start = Date()
        store.close()
        XCTAssertLessThan(Date().timeIntervalSince(start), 8)
        let said = lines.lock.withLock { lines.all }
        XCTAssertTrue(said.contains { $0.hasPrefix("error: 50 policy decisions were not written to the decision log of") }, "\(said)")
    }

    /// Any process prunes, however few decisions it writes: one crossing a multiple of
    /// `pruneEvery` IDs deletes the oldest past `kept`, in bounded statements.
    func testAProcessWritingOneDecisionPrunesTheLog() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url)
        defer { store.close() }
        let filler = try XCTUnwrap(store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        defer { try? filler.connection.close().wait() }
        try filler.execute(
            """
            INSERT INTO decision (point, policies, allow, reasons, duration, at)
            SELECT 'share.save', '["old"]', 1, '[]', 0, 0 FROM generate_series(1, 12499)
            """
        )
        store.driver?.decisionLog?.add(
            PolicyDecision(id: 0, point: "share.save", policies: ["new"], allow: true, reasons: [], duration: 0, time: Date())
        )
        let latest = try XCTUnwrap(store.driver?.decisionLog?.latest(limit: 1))
        XCTAssertEqual(latest.map(\.policies), [["new"]])
        let rows = try filler.query("SELECT COUNT(*), MIN(id), MAX(id) FROM decision", [])
        XCTAssertEqual(rows.first?.first, Int64(StoreDecisionLog.defaultKept).databaseValue)
        XCTAssertEqual(rows.first?[2], Int64(12_500).databaseValue)
    }
}
