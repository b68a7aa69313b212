import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// A node's requests for zones another node holds (SPEC §16 M5), PostgreSQL: a request whose
/// first write finds its zone held is deferred, and asks for that zone's lock on the node's
/// spare connection. Writes of other zones go through meanwhile, whether deferred or in place
/// (the request out is ended, not waited for); a write in place of just what a request asked
/// for claims it; a zone being made elsewhere defers a request that makes one; and a write
/// waiting in place gives up within the store's busy timeout.
final class LockRequestTests: XCTestCase {
    struct Setup {
        let url: String
        let node: Engine
        let alice: CloudDatabase, bob: CloudDatabase, carol: CloudDatabase
        let aliceTrips: RecordZoneID, bobTrips: RecordZoneID
        /// Another node's write: what it holds, it holds until told.
        let holder: PostgresSession
        /// Reads `pg_stat_activity`.
        let watcher: PostgresSession

        func close() {
            try? holder.connection.close().wait()
            try? watcher.connection.close().wait()
            node.store.close()
            PostgresStore.dropScratch(url)
        }
    }

    func makeSetup(busyTimeout: TimeInterval = 5) throws -> Setup {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        let node = Engine(store: try Store.open(url, busyTimeout: busyTimeout))
        _ = try node.accounts.create(emails: ["alice@example.com"])
        _ = try node.accounts.create(emails: ["bob@example.com"])
        _ = try node.accounts.create(emails: ["carol@example.com"])
        let alice = try node.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let bob = try node.session(for: "bob@example.com").container("iCloud.t").privateCloudDatabase
        let carol = try node.session(for: "carol@example.com").container("iCloud.t").privateCloudDatabase
        let aliceTrips = try alice.saveZone("Trips").zoneID
        let bobTrips = try bob.saveZone("Trips").zoneID
        let pg = try XCTUnwrap(node.store.driver as? PostgresStore)
        return Setup(
            url: url,
            node: node,
            alice: alice,
            bob: bob,
            carol: carol,
            aliceTrips: aliceTrips,
            bobTrips: bobTrips,
            holder: try pg.openSession(statementTimeoutMs: 120_000),
            watcher: try pg.openSession(statementTimeoutMs: 120_000)
        )
    }

    func key(_ db: CloudDatabase, _ zone: RecordZoneID) -> ZoneLockKey {
        ZoneLockKey(container: db.container.containerID, ownerName: zone.ownerName, zoneName: zone.zoneName)
    }

    /// Another node writes Alice's Trips (the holder: the cluster's lock shared and the zone's).
    func holdZone(_ s: Setup, _ k: ZoneLockKey) throws {
        try s.holder.command("BEGIN")
        try s.holder.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock))")
        try s.holder.command("SELECT pg_advisory_xact_lock(\(k.halves.0), \(k.halves.1))")
    }

    func rec(_ name: String, _ zone: RecordZoneID) -> Record {
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

    /// A request for zone A is deferred (zone A held by another node): the node asks for zone
    /// A's lock on its spare connection. A later request for Bob's zone, which no one holds,
    /// should run at once. It is deferred behind zone A's wait instead.
    func testARequestForAFreeZoneIsDeferredBehindAnotherZonesWait() throws {
        let s = try makeSetup()
        defer { s.close() }
        try holdZone(s, key(s.alice, s.aliceTrips))
        let store = s.node.store

        // Request 1 (as the server's engine thread runs it): Alice's zone, held elsewhere.
        store.writeWait = .deferFirst
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("a1", s.aliceTrips)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        store.writeWait = .inPlace

        // Request 2: Bob's zone, free. Nothing about it waits on anyone.
        store.writeWait = .deferFirst
        var outcome: Error?
        do { _ = try s.bob.modifyRecords(saving: [rec("b1", s.bobTrips)]) } catch { outcome = error }
        let deferred = store.writeWait == .deferred
        store.writeWait = .inPlace
        XCTAssertNil(outcome, "a write to a zone no one holds was deferred behind another zone's lock request: \(String(describing: outcome))")
        XCTAssertFalse(deferred)
        try s.holder.command("ROLLBACK")
    }

    /// Same, but the second write waits in place (an observer's write, a request's second
    /// write, a script): the request out for the other zone is ended, not waited for, so the
    /// write goes through while that zone is still held elsewhere.
    func testAnInPlaceWriteToAFreeZoneWaitsForNoOtherZonesLockRequest() throws {
        let s = try makeSetup(busyTimeout: 20)
        defer { s.close() }
        try holdZone(s, key(s.alice, s.aliceTrips))
        let store = s.node.store
        store.writeWait = .deferFirst
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("a1", s.aliceTrips)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        let onReady = try XCTUnwrap(store.deferredBy?.onReady)
        store.writeWait = .inPlace
        // Alice's zone stays held until Bob's write is over (a ceiling only ends a hang).
        let released = LockedBox(false)
        let holder = LockedBox(s.holder)
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) {
            released.value = true
            try? holder.value.command("ROLLBACK")
        }
        XCTAssertNil(try s.bob.modifyRecords(saving: [rec("b1", s.bobTrips)]).firstError)
        XCTAssertFalse(released.value, "Bob's write in place waited for the lock asked for Alice's zone")
        // The request that was ended is told, and is run again.
        let woken = DispatchSemaphore(value: 0)
        onReady { woken.signal() }
        XCTAssertEqual(woken.wait(timeout: .now() + 30), .success)
        try s.holder.command("ROLLBACK")
        store.writeWait = .deferFirst
        XCTAssertNil(try s.alice.modifyRecords(saving: [rec("a1", s.aliceTrips)]).firstError)
        store.writeWait = .inPlace
    }

    /// Another node is making a zone (a first save to someone's default zone, in a long
    /// batch): it holds the lock on new zones' IDs to its commit. This node's request that
    /// makes a default zone declares that lock with its zones, so its first write is deferred
    /// (not waited for in place on the engine's thread), and goes through once the lock is
    /// free; meanwhile Bob's write to his own zone goes through at once.
    func testANewDefaultZoneWaitsForAnotherNodesZoneIDLockOffTheNodesPath() throws {
        let s = try makeSetup()
        defer { s.close() }
        let (high, low) = ZoneLockKey.zoneIDAllocation.halves
        try s.holder.command("BEGIN")
        try s.holder.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock)), pg_advisory_xact_lock(\(high), \(low))")
        let store = s.node.store
        store.writeWait = .deferFirst
        XCTAssertThrowsError(try s.carol.modifyRecords(saving: [rec("c1", .default)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        let onReady = try XCTUnwrap(store.deferredBy?.onReady)
        store.writeWait = .deferFirst
        XCTAssertNil(try s.bob.modifyRecords(saving: [rec("b1", s.bobTrips)]).firstError, "Bob's write to his zone waited for the zone-ID lock")
        store.writeWait = .inPlace
        try s.holder.command("ROLLBACK")
        let ready = DispatchSemaphore(value: 0)
        onReady { ready.signal() }
        XCTAssertEqual(ready.wait(timeout: .now() + 60), .success)
        store.writeWait = .deferFirst
        XCTAssertNil(try s.carol.modifyRecords(saving: [rec("c1", .default)]).firstError)
        store.writeWait = .inPlace
        XCTAssertEqual(try s.carol.fetchRecord(rec("c1", .default).recordID).recordID.recordName, "c1")
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
        defer { s.close() }
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
        defer { s.close() }
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

    /// A write that waits in place (a script's, an observer's, a request's second write) for a
    /// zone another node holds gives up at the store's busy timeout, as on SQLite, not at the
    /// statement timeout (5 s here), and says so: serviceUnavailable, retryable (from the
    /// second helper's concurrency attack).
    func testAWriteWaitingInPlaceGivesUpAtTheBusyTimeout() throws {
        let s = try makeSetup(busyTimeout: 0.3)
        defer { s.close() }
        try holdZone(s, key(s.alice, s.aliceTrips))
        XCTAssertEqual(s.node.store.writeWait, .inPlace)
        let started = ContinuousClock.now
        XCTAssertThrowsError(try s.alice.modifyRecords(saving: [rec("a1", s.aliceTrips)])) { error in
            let e = error as? ShareFlowError
            XCTAssertEqual(e?.code, .serviceUnavailable, "\(error)")
            XCTAssertEqual(e?.retryAfter, 1)
            XCTAssertTrue(e?.message.contains("store.busyTimeoutMs") == true, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(4), "waited for the statement timeout, not the busy timeout")
        // A server reads this for /readyz: writes are stalling.
        XCTAssertNotNil(s.node.store.lastLockWaitGaveUp)
        try s.holder.command("ROLLBACK")

        XCTAssertNoThrow(try s.alice.modifyRecords(saving: [rec("a1", s.aliceTrips)]))
    }

    /// Holds the highest of three zones elsewhere (a ceiling only ends a hang), defers a request
    /// for the lowest and the highest, then saves `writing(low, mid)` in place: it must go
    /// through while the highest is still held.
    private func writeInPlaceBesideARequestOut(busyTimeout: TimeInterval, _ writing: (_ low: RecordZoneID, _ mid: RecordZoneID) -> [Record]) throws {
        let s = try makeSetup(busyTimeout: busyTimeout)
        defer { s.close() }
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
}
