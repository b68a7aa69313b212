import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// PostgreSQL's prepared statements (SPEC §16 M5), as the store and the engine use them: a
/// statement whose first preparation failed (its transaction aborted by a lock timeout) works
/// again once the lock is free, a statement's parameters go from NULL to values and back, and
/// the async API runs from several tasks at once, each call's statement waiting for a task on
/// the same pool.
class PreparedStatementTests: XCTestCase {
    /// A write waiting in place for the write lock past the statement timeout: its pipelined
    /// `pg_advisory_xact_lock` fails (57014), the transaction is aborted, and the body's first
    /// statement, never prepared on this connection yet, has its Parse refused (25P02).
    /// postgres-nio keeps that failure for the statement's name on the connection for good.
    func testAStatementFirstPreparedInAnAbortedTransactionFailsForEverAfter() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url, postgres: PostgresSettings(poolSize: 4, statementTimeoutMs: 400))
        defer { store.close() }
        // Another process holds the write lock for 1.5 s.
        let (other, done) = try holdWriteLock(url, for: 1.5)
        defer { other.close() }
        let sql = "SELECT COUNT(*) FROM account WHERE id > ?"
        XCTAssertThrowsError(try store.write { tx in try tx.fetchInteger(sql, [0]) }, "the lock is held past the statement timeout")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        // The lock is free now: the same statement, in a write and in a read, must work.
        do {
            let n = try store.write { tx in try tx.fetchInteger(sql, [0]) }
            XCTAssertNotNil(n)
        } catch {
            XCTFail("the write after the lock was released failed: \(error)")
        }
        do {
            let n = try store.read { tx in try tx.fetchInteger(sql, [0]) }
            XCTAssertNotNil(n)
        } catch {
            XCTFail("a read on the engine's connection failed: \(error)")
        }
    }

    /// The same at the engine's level: an account created while another node's write holds the
    /// lock past the statement timeout fails (as it should); every later one fails too.
    func testAnEngineWriteAfterALockTimeoutKeepsFailing() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url, postgres: PostgresSettings(poolSize: 4, statementTimeoutMs: 400))
        let engine = Engine(store: store)
        defer { store.close() }
        // Another process holds the write lock for 1.5 s.
        let (other, done) = try holdWriteLock(url, for: 1.5)
        defer { other.close() }
        XCTAssertThrowsError(try engine.accounts.create(emails: ["first@example.com"]), "the lock is held past the statement timeout")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        for n in 0..<3 {
            do {
                _ = try engine.accounts.create(emails: ["later\(n)@example.com"])
            } catch {
                XCTFail("create #\(n) after the lock was released: \(error)")
            }
        }
    }

    /// A statement run first with a NULL, then with a value, then NULL again (one name each).
    func testNullThenValueThenNull() throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url)
        defer { store.close() }
        // Each parameter typed by its column, as the store's statements are (a lone `? IS NULL`
        // is PostgreSQL's 42P18 whether prepared or not).
        let sql = "SELECT COUNT(*) FROM account WHERE id = ? OR userRecordID = ?"
        for values: StoreArguments in [[nil, nil], [1, "_x"], [nil, nil], [nil, "_y"], [2, nil], [1, "_x"]] {
            XCTAssertNoThrow(XCTAssertEqual(try store.read { try $0.fetchInteger(sql, values) }, 0, "\(values.values)"))
        }
    }

    /// The async API (`Container.fetchShareParticipants`) called from several tasks at once on
    /// PostgreSQL: each engine call blocks its cooperative thread while the prepared statement
    /// it sent waits for a `Task` of its own to run on that same pool.
    func testAsyncCallsFromSeveralTasksOnPostgreSQL() async throws {
        guard let template = TestStore.postgresTemplate else { throw XCTSkip("runs on PostgreSQL (SHAREFLOW_TEST_POSTGRES)") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let store = try Store.open(url, postgres: PostgresSettings(poolSize: 4, statementTimeoutMs: 2000))
        defer { store.close() }
        let engine = Engine(store: store)
        nonisolated(unsafe) let world = try World(engine: engine)
        let start = Date()
        let failures = LockedBox<[String]>([])
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<4 {
                group.addTask {
                    // A container of its own per task.
                    let container = try! engine.session(for: world.alice).container(World.containerID)
                    for i in 0..<3 {
                        do {
                            _ = try await container.fetchShareParticipants([LookupInfo(emailAddress: "bob@example.com")])
                        } catch {
                            failures.update { $0.append("task \(n) call \(i): \(error)") }
                        }
                    }
                }
            }
        }
        let took = Date().timeIntervalSince(start)
        XCTAssertEqual(failures.value, [])
        // Bounded by the answer deadline each call would otherwise meet (7 s): a stalled call
        // fails above; this only says they did not each wait for it.
        XCTAssertLessThan(took, 30, "12 small reads")
    }
}
