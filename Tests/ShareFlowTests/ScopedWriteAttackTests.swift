import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// What a helper's attack on zone-scoped writes found (SPEC §16 M5), each kept as the test that
/// showed it, now passing. PostgreSQL, but for the feed read inside a savepoint (both drivers).
final class ScopedWriteAttackTests: XCTestCase {
    private struct Setup {
        let url: String
        let node: Engine
        let alice: CloudDatabase, bob: CloudDatabase, carol: CloudDatabase
        let aliceTrips: RecordZoneID, bobTrips: RecordZoneID
        let holder: PostgresSession
    }

    private func makeSetup(busyTimeout: TimeInterval = 5) throws -> Setup {
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
        let holder = try XCTUnwrap(node.store.driver as? PostgresStore).openSession(statementTimeoutMs: 120_000)
        return Setup(url: url, node: node, alice: alice, bob: bob, carol: carol, aliceTrips: aliceTrips, bobTrips: bobTrips, holder: holder)
    }

    private func key(_ db: CloudDatabase, _ zone: RecordZoneID) -> ZoneLockKey {
        ZoneLockKey(container: db.container.containerID, ownerName: zone.ownerName, zoneName: zone.zoneName)
    }

    /// Another node writes Alice's Trips (the holder: the cluster's lock shared and the zone's).
    private func holdZone(_ s: Setup, _ k: ZoneLockKey) throws {
        try s.holder.command("BEGIN")
        try s.holder.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock))")
        try s.holder.command("SELECT pg_advisory_xact_lock(\(k.halves.0), \(k.halves.1))")
    }

    private func rec(_ name: String, _ zone: RecordZoneID) -> Record {
        Record(recordType: "T", recordID: RecordID(recordName: name, zoneID: zone))
    }

    /// A request for zone A is deferred (zone A held by another node): the node asks for zone
    /// A's lock on its spare connection. A later request for Bob's zone, which no one holds,
    /// should run at once. It is deferred behind zone A's wait instead.
    func testARequestForAFreeZoneIsDeferredBehindAnotherZonesWait() throws {
        let s = try makeSetup()
        defer {
            try? s.holder.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
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
        defer {
            try? s.holder.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
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
        defer {
            try? s.holder.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
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

    /// Feed moves are queued and written at commit, or earlier when a database feed is read
    /// inside the write (`writeFeedMoves`), which empties the queue. A savepoint that reads a
    /// feed (a policy reading `databaseChanges`) then fails rolls back the rows of moves queued
    /// before it began, and `forget(movesMade:)` cannot give them back: they are gone from the
    /// queue. The save that committed is never in the owner's database feed.
    func testAFeedReadInsideAFailedSavepointLosesEarlierFeedMoves() throws {
        try EachDriver.run { location, driver in
            let engine = Engine(store: try Store.open(location))
            defer {
                engine.policies.removeAll(namePrefix: "peek")
                engine.store.close()
            }
            _ = try engine.accounts.create(emails: ["alice@example.com"])
            let alice = try engine.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
            let trips = try alice.saveZone("Trips").zoneID
            let r = { (name: String) in Record(recordType: "T", recordID: RecordID(recordName: name, zoneID: trips)) }
            XCTAssertNil(try alice.modifyRecords(saving: [r("r0")]).firstError, driver)
            let token = try alice.databaseChanges().changeToken
            let zoneToken = try alice.recordZoneChanges(trips).changeToken

            _ = engine.policies.add(.shareSave, name: "peek") { _ in
                _ = try? alice.databaseChanges()
                return .deny("not today")
            }
            let root = r("root")
            let result = try alice.modifyRecords(saving: [r("r1"), root, Share(rootRecord: root)], atomically: false)
            XCTAssertEqual(result.saved.map(\.recordID.recordName).sorted(), ["r1", "root"], driver)
            // The zone changed (r1 is in its feed) ...
            XCTAssertEqual(
                try alice.recordZoneChanges(trips, since: zoneToken).modifications.map(\.recordID.recordName).sorted(),
                ["r1", "root"],
                driver
            )
            // ... and the database feed must say so.
            XCTAssertEqual(
                try alice.databaseChanges(since: token).changedZoneIDs.map(\.zoneName),
                ["Trips"],
                "\(driver): a committed save is missing from the owner's database feed"
            )
        }
    }

    /// "Feed by feed in one order" holds only if every feed row is written at commit. A feed
    /// read inside the write (a policy reading `databaseChanges`) writes the moves queued so
    /// far at once, holding those rows, and the moves queued after it at commit: two sorted
    /// runs, not one. Node A: a batch saving a record V1 sees, then a share
    /// (its policy reads a feed), then deleting a record Bob sees. Node B meanwhile: a save in
    /// Carol's zone shared with Bob and V1 (Bob's row first, then V1's). A holds V1's row and
    /// wants Bob's; B holds Bob's and wants V1's: PostgreSQL's deadlock detector fails one, a 503.
    func testAFeedReadInsideAScopedWriteOrdersFeedRowsInTwoRuns() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let nodeA = Engine(store: try Store.open(url))
        let nodeB = Engine(store: try Store.open(url))
        defer {
            nodeA.policies.removeAll(namePrefix: "peek")
            nodeA.store.close()
            nodeB.store.close()
        }
        // Account IDs in this order: Bob's feed rows sort before V1's.
        for who in ["bob", "v1", "alice", "carol"] { _ = try nodeA.accounts.create(emails: ["\(who)@example.com"]) }
        let c = { (engine: Engine, who: String) in try engine.session(for: "\(who)@example.com").container("iCloud.t") }
        let alice = try c(nodeA, "alice").privateCloudDatabase
        let carol = try c(nodeB, "carol").privateCloudDatabase
        func invite(_ owner: Container, _ share: Share, _ who: String) throws {
            let (results, error) = owner.fetchShareParticipantResults([LookupRequest(emailAddress: "\(who)@example.com")])
            if let error { throw error }
            share.addParticipant(try results[0].1.get())
        }
        func accept(_ engine: Engine, _ who: String, _ url: String) throws {
            let vc = try c(engine, who)
            let (metas, error) = vc.fetchShareMetadataResults([url])
            if let error { throw error }
            if let e = vc.acceptShareResults([try metas[0].1.get()]).1 { throw e }
        }
        // Alice's zone: R1 shared with V1, R2 (with child k2) shared with Bob.
        let z1 = try alice.saveZone("Z1").zoneID
        let r1 = Record(recordType: "T", recordID: RecordID(recordName: "r1", zoneID: z1))
        let r2 = Record(recordType: "T", recordID: RecordID(recordName: "r2", zoneID: z1))
        let k2 = Record(recordType: "T", recordID: RecordID(recordName: "k2", zoneID: z1), parent: r2.recordID)
        let s1 = Share(rootRecord: r1)
        let s2 = Share(rootRecord: r2)
        try invite(try c(nodeA, "alice"), s1, "v1")
        try invite(try c(nodeA, "alice"), s2, "bob")
        XCTAssertNil(try alice.modifyRecords(saving: [r1, r2, k2, s1, s2]).firstError)
        try accept(nodeA, "v1", s1.url!)
        try accept(nodeA, "bob", s2.url!)
        // Carol's zone, shared whole with Bob and V1.
        let z2 = try carol.saveZone("Z2").zoneID
        let zs = Share(zoneID: z2)
        try invite(try c(nodeB, "carol"), zs, "bob")
        try invite(try c(nodeB, "carol"), zs, "v1")
        XCTAssertNil(try carol.modifyRecords(saving: [zs]).firstError)
        try accept(nodeB, "bob", zs.url!)
        try accept(nodeB, "v1", zs.url!)

        // Node A's share.save policy reads a feed, then lets node B start and waits a moment.
        let go = DispatchSemaphore(value: 0)
        let feedReader = try c(nodeA, "alice").privateCloudDatabase
        _ = nodeA.policies.add(.shareSave, name: "peek") { _ in
            _ = try? feedReader.databaseChanges()
            go.signal()
            Thread.sleep(forTimeInterval: 1.5)
            return .allow
        }
        let outcomeB = LockedBox<Error?>(nil)
        let doneB = DispatchSemaphore(value: 0)
        let carolBox = LockedBox(carol)
        Thread {
            go.wait()
            do {
                let r = try carolBox.value.modifyRecords(saving: [Record(recordType: "T", recordID: RecordID(recordName: "x", zoneID: z2))])
                if let e = r.firstError { throw e }
            } catch { outcomeB.value = error }
            doneB.signal()
        }.start()
        let r1b = Record(recordType: "T", recordID: RecordID(recordName: "r1", zoneID: z1))
        let r3 = Record(recordType: "T", recordID: RecordID(recordName: "r3", zoneID: z1))
        var outcomeA: Error?
        do {
            let r = try alice.modifyRecords(
                saving: [r1b, r3, Share(rootRecord: r3)],
                deleting: [k2.recordID],
                savePolicy: .allKeys,
                atomically: false
            )
            if let e = r.firstError { throw e }
        } catch { outcomeA = error }
        XCTAssertEqual(doneB.wait(timeout: .now() + 60), .success)
        XCTAssertNil(outcomeA, "node A's write failed")
        XCTAssertNil(outcomeB.value, "node B's write failed")
    }

    /// A savepoint that claimed another zone and took positions in it, then rolled back, lets
    /// go of that zone's lock (PostgreSQL releases a rolled-back subtransaction's locks) but
    /// the positions stay in `FeedBumps.seqs` ("not given back"): at commit the write sets that
    /// zone's counter (`writeLogPositions`) without holding its lock. Another node wrote the
    /// zone in between: the counter goes back, and positions are handed out twice.
    func testARolledBackClaimStillWritesThatZonesCounterAtCommit() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let nodeA = Engine(store: try Store.open(url))
        let nodeB = Engine(store: try Store.open(url))
        defer {
            nodeA.policies.removeAll(namePrefix: "meddle")
            nodeA.store.close()
            nodeB.store.close()
        }
        _ = try nodeA.accounts.create(emails: ["alice@example.com"])
        let aliceA = try nodeA.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let aliceB = try nodeB.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let z1 = try aliceA.saveZone("Z1").zoneID
        let z2 = try aliceA.saveZone("Z2").zoneID
        let rec = { (name: String, zone: RecordZoneID) in Record(recordType: "T", recordID: RecordID(recordName: name, zoneID: zone)) }
        XCTAssertNil(try aliceA.modifyRecords(saving: [rec("z2a", z2)]).firstError)  // Z2 at 1

        let calls = LockedBox(0)
        let bDone = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let inner = LockedBox(aliceA)
        _ = nodeA.policies.add(.shareSave, name: "meddle") { _ in
            calls.update { $0 += 1 }
            if calls.value == 1 {
                // The policy writes Alice's other zone, then says no: its savepoint rolls back.
                _ = try? inner.value.modifyRecords(saving: [rec("fromPolicy", z2)])
                return .deny("no")
            }
            // The second share: node B writes Z2 now, while this write is still open.
            go.signal()
            _ = bDone.wait(timeout: .now() + 30)
            return .allow
        }
        let bBox = LockedBox(aliceB)
        let bOutcome = LockedBox<String>("")
        Thread {
            go.wait()
            do {
                let r = try bBox.value.modifyRecords(
                    saving: ["b1", "b2", "b3"].map { Record(recordType: "T", recordID: RecordID(recordName: $0, zoneID: z2)) }
                )
                bOutcome.value = r.firstError.map { "\($0)" } ?? "ok"
            } catch { bOutcome.value = "\(error)" }
            bDone.signal()
        }.start()
        let r1 = rec("r1", z1)
        let r2 = rec("r2", z1)
        _ = try aliceA.modifyRecords(saving: [r1, r2, Share(rootRecord: r1), Share(rootRecord: r2)], atomically: false)

        let check = try XCTUnwrap(nodeA.store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        defer { try? check.connection.close().wait() }
        let z2Row = try XCTUnwrap(
            Int64.fromDatabaseValue(
                try check.query(
                    """
                    SELECT z.id FROM zone z JOIN account a ON a.id = z.ownerID WHERE z.name = 'Z2' AND a.userRecordID = ?
                    """,
                    [z2.ownerName.databaseValue]
                )[0][0]
            )
        )
        let counter = Int64.fromDatabaseValue(try check.query("SELECT changeSeq FROM zone WHERE id = ?", [z2Row.databaseValue])[0][0]) ?? -1
        let highest = Int64.fromDatabaseValue(try check.query("SELECT MAX(seq) FROM record WHERE zoneID = ?", [z2Row.databaseValue])[0][0]) ?? -1
        XCTAssertGreaterThanOrEqual(counter, highest, "Z2's counter went back below positions already given")
        // A follower at Z2's current token, then one more save there: is it seen?
        let token = try aliceA.recordZoneChanges(z2).changeToken
        XCTAssertNil(try aliceB.modifyRecords(saving: [rec("after", z2)]).firstError)
        XCTAssertEqual(
            try aliceA.recordZoneChanges(z2, since: token).modifications.map(\.recordID.recordName),
            ["after"],
            "a follower at the current token misses the next save"
        )
    }

    /// A write that waits in place (a script's, an observer's, a request's second write) for a
    /// zone another node holds gives up at the store's busy timeout, as on SQLite, not at the
    /// statement timeout (5 s here), and says so: serviceUnavailable, retryable (from the
    /// second helper's concurrency attack).
    func testAWriteWaitingInPlaceGivesUpAtTheBusyTimeout() throws {
        let s = try makeSetup(busyTimeout: 0.3)
        defer {
            try? s.holder.connection.close().wait()
            s.node.store.close()
            PostgresStore.dropScratch(s.url)
        }
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
}
