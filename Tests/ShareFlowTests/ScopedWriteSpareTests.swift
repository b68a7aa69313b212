import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// What a second attack on zone-scoped writes found (SPEC §16 M5), PostgreSQL: the spare
/// connection's lock requests and writes in place, nested policies' savepoints.
final class ScopedWriteSpareTests: XCTestCase {
    struct Setup {
        let url: String
        let node: Engine
        let alice: CloudDatabase
        let holder: PostgresSession
        let watcher: PostgresSession
    }

    func makeSetup(busyTimeout: TimeInterval = 5) throws -> Setup {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        let node = Engine(store: try Store.open(url, busyTimeout: busyTimeout))
        _ = try node.accounts.create(emails: ["alice@example.com"])
        let alice = try node.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let pg = try XCTUnwrap(node.store.driver as? PostgresStore)
        return Setup(
            url: url,
            node: node,
            alice: alice,
            holder: try pg.openSession(statementTimeoutMs: 120_000),
            watcher: try pg.openSession(statementTimeoutMs: 120_000)
        )
    }

    func key(_ db: CloudDatabase, _ zone: RecordZoneID) -> ZoneLockKey {
        ZoneLockKey(container: db.container.containerID, ownerName: zone.ownerName, zoneName: zone.zoneName)
    }

    func rec(_ name: String, _ zone: RecordZoneID) -> Record { Self.rec(name, zone) }
    static func rec(_ name: String, _ zone: RecordZoneID) -> Record {
        Record(recordType: "T", recordID: RecordID(recordName: name, zoneID: zone))
    }

    /// Three of Alice's zones, in the order their keys are locked.
    func threeZones(_ s: Setup) throws -> [RecordZoneID] {
        let zones = try ["Z1", "Z2", "Z3"].map { try s.alice.saveZone($0).zoneID }
        return zones.sorted { key(s.alice, $0).value < key(s.alice, $1).value }
    }

    /// Backends of this database waiting on a lock (other than the watcher).
    func waitingBackends(_ s: Setup) throws -> Int {
        let rows = try s.watcher.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'", [])
        return Int(Int64.fromDatabaseValue(rows[0][0]) ?? -1)
    }

    /// A request for zones {low, high} is deferred (high held by another node): its lock
    /// request on the spare connection takes the cluster's lock shared and `low`, and waits for
    /// `high`. A write in place of {low, mid} ends that request by closing the spare
    /// connection; PostgreSQL ends the waiting statement too (`client_connection_check_interval`),
    /// so the write goes through while `high` is still held, not after its own node's request.
    func testEndingTheSparesRequestEndsItInPostgreSQLToo() throws {
        try writeInPlaceBesideARequestOut(busyTimeout: 20) { low, mid in [rec("c", low), rec("d", mid)] }
    }

    /// The same request {low, high} out; a write in place of {low} alone, which that request
    /// covers, does not claim it (it would wait on the engine's thread for `high`, which it
    /// never writes): it ends it and goes through while `high` is still held.
    func testAnInPlaceWriteWaitsForNoZoneItDoesNotWrite() throws {
        try writeInPlaceBesideARequestOut(busyTimeout: 5) { low, _ in [rec("c", low)] }
    }

    /// Makes zone Z, holds it elsewhere (another node's write), and defers a request's write of
    /// record "a" to it: its lock request goes out on the spare. `writeWait` is left at
    /// `deferred`, for the caller to read `deferredBy` and set back.
    private func deferARequestForAHeldZone(_ s: Setup) throws -> RecordZoneID {
        let z = try s.alice.saveZone("Z").zoneID
        let k = key(s.alice, z)
        try s.holder.command("BEGIN")
        try s.holder.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock)), pg_advisory_xact_lock(\(k.halves.0), \(k.halves.1))")
        s.node.store.writeWait = .deferFirst
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("a", z)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        return z
    }

    /// A request for zone Z is out (Z held by another node); a write in place of Z alone (an
    /// observer's write to the zone the node's requests wait for) waits for that request and
    /// claims it once Z comes, rather than end it: ending it each time put the node's waiting
    /// requests back at the end of PostgreSQL's queue, and they gave up with 503 (the helper's
    /// concurrency attack). The spare's backend is the one that wrote.
    func testAnInPlaceWriteOfJustWhatARequestAskedForClaimsIt() throws {
        let s = try makeSetup(busyTimeout: 20)
        defer {
            try? s.holder.connection.close().wait()
            try? s.watcher.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
        let z = try deferARequestForAHeldZone(s)
        let onReady = try XCTUnwrap(s.node.store.deferredBy?.onReady)
        s.node.store.writeWait = .inPlace
        var spare: Int64?
        while spare == nil {  // the spare's request waits for Z
            let rows = try s.watcher.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'", [])
            spare = rows.first.flatMap { Int64.fromDatabaseValue($0[0]) }
            if spare == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        let holderBox = LockedBox(s.holder)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { try? holderBox.value.command("ROLLBACK") }
        XCTAssertNil(try s.alice.modifyRecords(saving: [rec("b", z)]).firstError)
        let rows = try s.watcher.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(spare!)", [])
        XCTAssertEqual(Int64.fromDatabaseValue(rows[0][0]), 1, "the request out was ended, not claimed")
        // The deferred request is told, and goes through when run again.
        let woken = DispatchSemaphore(value: 0)
        onReady { woken.signal() }
        XCTAssertEqual(woken.wait(timeout: .now() + 30), .success)
        XCTAssertNil(try s.alice.modifyRecords(saving: [rec("a", z)]).firstError)
        XCTAssertEqual(try s.alice.recordZoneChanges(z, since: nil).modifications.count, 2)
    }

    /// Zone Z held elsewhere for good; a request for Z is deferred (its lock request out on the
    /// spare, kept for the busy timeout and a second); 1.5 s later a write in place of Z alone
    /// waits for that request to claim it. It gives up within the one busy timeout (2 s), not
    /// after waiting out the request and then its own lock (3.5 s: the third attack).
    func testAWriteInPlaceClaimingARequestGivesUpWithinTheBusyTimeout() throws {
        let s = try makeSetup(busyTimeout: 2)
        defer {
            try? s.holder.connection.close().wait()
            try? s.watcher.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
        let z = try deferARequestForAHeldZone(s)
        s.node.store.writeWait = .inPlace
        Thread.sleep(forTimeInterval: 1.5)
        let started = Date()
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("b", z)])) { error in
            XCTAssertEqual((error as? ShareFlowError)?.code, .serviceUnavailable, "\(error)")
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertLessThan(waited, 2.6, "a write in place waited \(waited) s, past store.busyTimeoutMs (2 s)")
    }

    /// Holds the highest of three zones elsewhere (a ceiling only ends a hang), defers a request
    /// for the lowest and the highest, then saves `writing(low, mid)` in place: it must go
    /// through while the highest is still held.
    private func writeInPlaceBesideARequestOut(busyTimeout: TimeInterval, _ writing: (_ low: RecordZoneID, _ mid: RecordZoneID) -> [Record]) throws {
        let s = try makeSetup(busyTimeout: busyTimeout)
        defer {
            try? s.holder.connection.close().wait()
            try? s.watcher.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
        let z = try threeZones(s)
        let (low, mid, high) = (z[0], z[1], z[2])
        let k = key(s.alice, high)
        try s.holder.command("BEGIN")
        try s.holder.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock)), pg_advisory_xact_lock(\(k.halves.0), \(k.halves.1))")
        let holderBox = LockedBox(s.holder)
        let released = LockedBox(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + 40) {
            released.value = true
            try? holderBox.value.command("ROLLBACK")
        }

        let store = s.node.store
        store.writeWait = .deferFirst
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("a", low), rec("b", high)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        store.writeWait = .inPlace
        while try waitingBackends(s) != 1 { Thread.sleep(forTimeInterval: 0.02) }  // the spare's request waits for `high`

        let records = writing(low, mid)
        let started = Date()
        var outcome = "ok"
        do {
            let r = try s.alice.modifyRecords(saving: records)
            if let e = r.firstError { outcome = "\(e)" }
        } catch { outcome = "\(error)" }
        let took = Date().timeIntervalSince(started)
        let what = records.map(\.recordID.zoneID.zoneName)
        XCTAssertEqual(outcome, "ok", "a write of \(what) in place failed after \(took) s")
        XCTAssertFalse(released.value, "a write of \(what) in place waited \(took) s, until the highest zone was let go")
        try? s.holder.command("ROLLBACK")
    }

    /// Nested policies: A's batch in Z1 saves share S1; its policy saves share S2 in Z2 (a
    /// nested modify, Z2 claimed); S2's save asks the policy again, which writes Z3 (claimed,
    /// positions taken) and denies S2: the savepoint of S2's save rolls back Z2's share and Z3's
    /// write, and Z3's lock with them. Node B then writes Z3 while A's batch is open. Afterwards
    /// Z3's counter and feed are whole, and Z2's position counter is not behind its rows.
    func testNestedPolicySavepointsRolledBackForgetTheirZones() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let nodeA = Engine(store: try Store.open(url))
        let nodeB = Engine(store: try Store.open(url))
        defer {
            nodeA.policies.removeAll(namePrefix: "nest")
            nodeA.store.close()
            nodeB.store.close()
        }
        _ = try nodeA.accounts.create(emails: ["alice@example.com"])
        let alice = try nodeA.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let aliceB = try nodeB.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let z1 = try alice.saveZone("Z1").zoneID
        let z2 = try alice.saveZone("Z2").zoneID
        let z3 = try alice.saveZone("Z3").zoneID
        XCTAssertNil(try alice.modifyRecords(saving: [rec("seed2", z2), rec("seed3", z3)]).firstError)
        let t2 = try alice.recordZoneChanges(z2).changeToken
        let t3 = try alice.recordZoneChanges(z3).changeToken
        let calls = LockedBox(0)
        let inner = LockedBox(alice)
        let go = DispatchSemaphore(value: 0)
        let bDone = DispatchSemaphore(value: 0)
        let innerErrors = LockedBox<[String]>([])
        _ = nodeA.policies.add(.shareSave, name: "nest") { _ in
            calls.update { $0 += 1 }
            switch calls.value {
            case 1:
                // S1's policy: save S2 in Z2 (nested).
                let root = Self.rec("root2", z2)
                do {
                    let r = try inner.value.modifyRecords(saving: [root, Share(rootRecord: root)], atomically: false)
                    innerErrors.update { $0 += r.errors.map { "\($0.error.code)" } }
                } catch { innerErrors.update { $0.append("\(error)") } }
                return .allow
            case 2:
                // S2's policy: write Z3, then deny S2.
                do {
                    let r = try inner.value.modifyRecords(saving: [Self.rec("fromPolicy1", z3), Self.rec("fromPolicy2", z3)])
                    innerErrors.update { $0 += r.errors.map { "\($0.error.code)" } }
                } catch { innerErrors.update { $0.append("\(error)") } }
                return .deny("no S2")
            default:
                go.signal()
                _ = bDone.wait(timeout: .now() + 20)
                return .allow
            }
        }
        let bBox = LockedBox(aliceB)
        let bOutcome = LockedBox("not run")
        Thread {
            go.wait()
            do {
                let r = try bBox.value.modifyRecords(saving: ["b1", "b2"].map { Self.rec($0, z3) })
                bOutcome.value = r.firstError.map { "\($0)" } ?? "ok"
            } catch { bOutcome.value = "\(error)" }
            bDone.signal()
        }.start()
        let r1 = rec("r1", z1)
        let r4 = rec("r4", z1)
        let result = try alice.modifyRecords(saving: [r1, r4, Share(rootRecord: r1), Share(rootRecord: r4)], atomically: false)
        XCTAssertEqual(bOutcome.value, "ok")
        XCTAssertEqual(result.errors.count, 0, "\(result.errors)")
        // root2 was saved by the nested modify (its own item), S2 was denied.
        XCTAssertEqual(Set(try alice.recordZoneChanges(z2, since: t2).modifications.map(\.recordID.recordName)), ["root2"])
        XCTAssertEqual(Set(try alice.recordZoneChanges(z3, since: t3).modifications.map(\.recordID.recordName)), ["b1", "b2"])
        let check = try XCTUnwrap(nodeA.store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        defer { try? check.connection.close().wait() }
        let over = try check.query(
            """
            SELECT z.name FROM zone z WHERE EXISTS (SELECT 1 FROM record r WHERE r.zoneID = z.id AND r.seq > z.changeSeq)
            """,
            []
        )
        XCTAssertEqual(over.count, 0, "positions past a zone's counter")
        let dupes = try check.query("SELECT zoneID, seq FROM record WHERE seq > 0 GROUP BY zoneID, seq HAVING count(*) > 1", [])
        XCTAssertEqual(dupes.count, 0)
        let t3b = try alice.recordZoneChanges(z3).changeToken
        XCTAssertNil(try aliceB.modifyRecords(saving: [rec("after", z3)]).firstError)
        XCTAssertEqual(try alice.recordZoneChanges(z3, since: t3b).modifications.map(\.recordID.recordName), ["after"])
    }
}
