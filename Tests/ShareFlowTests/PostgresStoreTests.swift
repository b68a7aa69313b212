import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest
@testable import ShareFlow

/// The PostgreSQL store's own parts (SPEC §16): the URL, the dialect's rewrites (always), and,
/// when the suite runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES), the session's settings, the
/// schema's guard against another program's tables, and failures as one clear line.
final class PostgresStoreTests: XCTestCase {
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
        for (bad, why) in [("postgres://localhost/db", "names no user"), ("postgres://app@localhost/", "names no database"),
                           ("postgres://app@localhost/db?sslmode=verify-full", "sslmode must be disable or require"),
                           ("postgres://app@localhost/db?timeout=3", "unknown parameter timeout"),
                           ("postgres://app:pw@localhost:99999/db", "")] {
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
        let store = try Store(path: url, postgres: PostgresSettings(poolSize: 2, statementTimeoutMs: 1234))
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
            let store = try Store(path: url)
            _ = try store.write { tx in
                try tx.run("DROP SCHEMA shareflow CASCADE", [])
                try tx.run("CREATE SCHEMA shareflow", [])
                try tx.run("CREATE TABLE shareflow.invoices (id BIGINT)", [])
            }
            store.close()
        }
        XCTAssertThrowsError(try Store(path: url)) { error in
            XCTAssertTrue("\(error)".contains("is not a ShareFlow store"), "\(error)")
            XCTAssertTrue("\(error)".contains("invoices"), "\(error)")
        }
    }
}
