import Foundation
import GRDB
import GRDBSQLite
import ShareFlowEngineTestKit
import ShareFlowPostgres
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// SPEC §18 P3 on SQLite: the decision log is the store's table `decision`, which every
/// process on the file reads (PostgresStoreTests holds the same of several nodes).
final class DecisionLogTests: XCTestCase {
    /// Two engines on one store stand for two processes (or nodes), on each driver: a denial
    /// one makes (its item's changes rolled back) is in the log the other reads, with the
    /// table's ID; the other's next read sees the next decision.
    func testTheLogIsSharedByEveryProcessOnTheStore() throws {
        try EachDriver.run { location, driver in
            let one = Engine(store: try Store.open(location))
            let other = Engine(store: try Store.open(location))
            defer {
                one.store.close()
                other.store.close()
            }
            let world = try World(engine: one)
            one.policies.add(.shareSave, name: "says-no") { _ in .deny("not here") }
            XCTAssertThrowsError(try world.share(["bob@example.com"]))
            let own = one.policies.decisions(limit: 1).last
            let last = try XCTUnwrap(other.policies.decisions(limit: 5).last, "\(driver): the other process reads the decision")
            XCTAssertEqual(own?.id, last.id, driver)
            XCTAssertEqual(last.point, "share.save", driver)
            XCTAssertFalse(last.allow, driver)
            XCTAssertEqual(last.policies, ["says-no"], driver)
            XCTAssertEqual(last.reasons, ["says-no: not here"], driver)
            XCTAssertGreaterThan(last.id, 0, driver)
            // Read twice with nothing written between: the same; the next decision is seen.
            XCTAssertEqual(other.policies.decisions(limit: 5).map(\.id), other.policies.decisions(limit: 5).map(\.id), driver)
            XCTAssertThrowsError(try world.share(["carol@example.com"]))
            let newest = try XCTUnwrap(one.policies.decisions(limit: 1).last)
            XCTAssertEqual(other.policies.decisions(limit: 5).last?.id, newest.id, driver)
            XCTAssertGreaterThan(newest.id, last.id, driver)
        }
        // A store in memory keeps its process's own.
        XCTAssertNil(try Store(path: ":memory:").decisionLog)
    }

    /// A policy reading the log inside its own write: the file's write lock is the engine's
    /// own, so the log neither waits for it nor deadlocks; what waits is listed last, and is
    /// written once the write is over.
    func testAPolicyReadingTheLogInsideItsWriteNeitherWaitsNorLosesADecision() throws {
        let dir = try makeTemporaryFolder("sf-decisions")
        defer { try? FileManager.default.removeItem(at: dir) }
        let engine = Engine(store: try Store(path: dir.appendingPathComponent("store.sqlite").path))
        defer { engine.store.close() }
        let world = try World(engine: engine)
        final class Seen: @unchecked Sendable {
            var counts: [Int] = []
            var tableAnswered: [Bool] = []
        }
        let seen = Seen()
        let log = try XCTUnwrap(engine.store.decisionLog)
        _ = engine.policies.add(.shareSave, name: "reads-the-log") { [unowned engine] _ in
            seen.counts.append(engine.policies.decisions(limit: 50).count)
            // The table itself answered: a read that waited for the engine's lock would give
            // up after the log's timeout and answer nil (the policy set then lists its own).
            // An event, not a clock: under ThreadSanitizer a thread can stall a second for
            // reasons of its own (stop 56's CI).
            seen.tableAnswered.append(log.latest(limit: 50) != nil)
            return .allow
        }
        let share = try world.share(["bob@example.com"])
        share.addParticipant(try world.participant("carol@example.com", permission: .readOnly))
        XCTAssertNil(try world.c.privateCloudDatabase.modifyRecords(saving: [share]).error)
        XCTAssertEqual(seen.tableAnswered, [true, true], "a read of the log waited for the engine's own write lock")
        XCTAssertEqual(seen.counts.count, 2)
        XCTAssertLessThan(seen.counts[0], seen.counts[1], "the second read sees the first decision")
        let logged = engine.policies.decisions(limit: 50).filter { $0.point == "share.save" }
        XCTAssertEqual(logged.count, 2, "\(logged)")
        XCTAssertTrue(logged.allSatisfy { $0.id > 0 })
    }

    /// The table held by another process's write (a long `run`): handing decisions over never
    /// waits, and they are written once the lock goes.
    func testALockedFileHoldsUpNoDecision() throws {
        let dir = try makeTemporaryFolder("sf-decisions")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("store.sqlite").path
        let store = try Store(path: path)
        defer { store.close() }
        let log = try XCTUnwrap(store.decisionLog)
        // Another process's write, as SQLite sees one: a connection of its own in BEGIN IMMEDIATE.
        var holder: OpaquePointer?
        XCTAssertEqual(sqlite3_open(path, &holder), SQLITE_OK)
        defer { sqlite3_close(holder) }
        XCTAssertEqual(sqlite3_exec(holder, "BEGIN IMMEDIATE", nil, nil, nil), SQLITE_OK)
        let start = Date()
        for n in 0..<100 {
            log.add(PolicyDecision(id: 0, point: "share.save", policies: ["p"], allow: true, reasons: ["#\(n)"], duration: 0.001, time: Date()))
        }
        // An add that waited for the write would wait for the COMMIT below, or the write's
        // 250 ms apiece: far past this bound, which leaves room for a sanitizer's stalls.
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "handing decisions over waited")
        // Read meanwhile: the table's rows (none yet) and what waits, in order.
        let meanwhile = try XCTUnwrap(log.latest(limit: 1_000))
        XCTAssertEqual(meanwhile.map(\.reasons), (0..<100).map { ["#\($0)"] })
        XCTAssertEqual(sqlite3_exec(holder, "COMMIT", nil, nil, nil), SQLITE_OK)
        // Written once the lock goes: the background write gets it within moments.
        var written = try XCTUnwrap(log.latest(limit: 1_000))
        let deadline = Date().addingTimeInterval(30)
        while !written.allSatisfy({ $0.id > 0 }) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
            written = try XCTUnwrap(log.latest(limit: 1_000))
        }
        XCTAssertEqual(written.map(\.reasons), (0..<100).map { ["#\($0)"] })
        XCTAssertTrue(written.allSatisfy { $0.id > 0 })
        XCTAssertEqual(written.map(\.id), written.map(\.id).sorted())
    }

    /// Closed is closed: with the file's lock held past the close, what waited is not written
    /// once it goes (no retry reopens the log); a store file deleted under a running process
    /// is not made again, empty, by its log.
    func testAClosedLogWritesNothingAndADeletedFileIsNotMadeAgain() throws {
        let dir = try makeTemporaryFolder("sf-decisions")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("store.sqlite").path
        let store = try Store(path: path)
        let log = try XCTUnwrap(store.decisionLog)
        var holder: OpaquePointer?
        XCTAssertEqual(sqlite3_open(path, &holder), SQLITE_OK)
        defer { sqlite3_close(holder) }
        XCTAssertEqual(sqlite3_exec(holder, "BEGIN IMMEDIATE", nil, nil, nil), SQLITE_OK)
        for n in 0..<5 {
            log.add(PolicyDecision(id: 0, point: "share.save", policies: ["p"], allow: true, reasons: ["#\(n)"], duration: 0, time: Date()))
        }
        store.close()
        XCTAssertEqual(sqlite3_exec(holder, "COMMIT", nil, nil, nil), SQLITE_OK)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM decision") }, 0)
        XCTAssertNil(log.latest(limit: 5), "a closed log reads nothing")

        let gone = dir.appendingPathComponent("gone.sqlite").path
        let other = try Store(path: gone)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: gone + suffix) }
        other.decisionLog?.add(PolicyDecision(id: 0, point: "share.save", policies: ["p"], allow: true, reasons: [], duration: 0, time: Date()))
        _ = other.decisionLog?.latest(limit: 1)
        other.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: gone), "the log made the deleted store file again")
    }

    /// `store check` reads the log's rows as the log does: a list that is not JSON is named.
    func testTheCheckNamesADamagedDecision() throws {
        let dir = try makeTemporaryFolder("sf-decisions")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: dir.appendingPathComponent("store.sqlite").path)
        defer { store.close() }
        _ = try store.write {
            try $0.run("INSERT INTO decision (point, policies, allow, reasons, duration, at) VALUES ('share.save', 'oops', 1, '[]', 0, 0)", [])
        }
        let check = try store.check()
        XCTAssertTrue(
            check.problems.contains { $0.contains("decision") && $0.contains("policies") && $0.contains("not a JSON list") },
            "\(check.problems)"
        )
    }
}
