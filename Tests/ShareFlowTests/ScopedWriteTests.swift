import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// Writes scoped to zones (SPEC §16 M5): two nodes writing different zones run at once, and a
/// scoped write is held to what it declared, on both drivers.
final class ScopedWriteTests: XCTestCase {
    /// A write declared for one zone that reaches another, or a table no zone owns, takes it
    /// if no other writer holds it (always, on SQLite); held elsewhere (PostgreSQL), it fails
    /// as busy at once, having written nothing, rather than wait for a writer that may be
    /// waiting for it.
    func testAZoneScopedWriteTakesWhatItDidNotDeclareOnlyIfFree() throws {
        try EachDriver.run { location, driver in
            let engine = Engine(store: try Store.open(location))
            defer { engine.store.close() }
            _ = try engine.accounts.create(emails: ["alice@example.com"])
            let alice = try engine.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
            let trips = try alice.saveZone("Trips").zoneID
            let notes = try alice.saveZone("Notes").zoneID
            let key = { (zone: RecordZoneID) in
                ZoneLockKey(container: alice.container.containerID, ownerName: zone.ownerName, zoneName: zone.zoneName)
            }
            let note = { (name: String) in Record(recordType: "N", recordID: RecordID(recordName: name, zoneID: notes)) }
            // A modify over two zones declares both, and writes both.
            XCTAssertNil(
                try alice.modifyRecords(saving: [Record(recordType: "T", recordID: RecordID(recordName: "t1", zoneID: trips)), note("n1")])
                    .firstError,
                driver
            )
            // Nothing else writing: what was not declared is taken.
            try engine.transaction(scope: .zones([key(trips)])) { _ in
                XCTAssertNil(try alice.modifyRecords(saving: [note("n2")]).firstError, driver)
                _ = try engine.accounts.create(emails: ["bob@example.com"])
            }
            XCTAssertEqual(try alice.fetchRecord(note("n2").recordID).recordID.recordName, "n2", driver)
            XCTAssertNotNil(try engine.accounts.find("bob@example.com"), driver)
            guard let postgres = engine.store.driver as? PostgresStore else { return }

            // Another writer holds Notes: a write declared for Trips that reaches it is busy.
            let other = try postgres.openSession(statementTimeoutMs: 60_000)
            defer { try? other.connection.close().wait() }
            let (high, low) = key(notes).halves
            try other.command("BEGIN")
            try other.command("SELECT pg_advisory_xact_lock(\(high), \(low))")
            XCTAssertThrowsError(
                try engine.transaction(scope: .zones([key(trips)])) { _ in
                    if let error = try alice.modifyRecords(saving: [note("n3")]).firstError { throw error }
                },
                driver
            ) { error in
                XCTAssertTrue("\(error)".contains("busy"), "\(driver): \(error)")
                XCTAssertEqual((error as? ShareFlowError)?.retryAfter, 1, "\(error)")
            }
            XCTAssertThrowsError(try alice.fetchRecord(note("n3").recordID), driver)
            try other.command("ROLLBACK")

            // Another zone-scoped writer is writing: a write declared for Trips that makes an
            // account (a table no zone owns) is busy, and the account is not made.
            try other.command("BEGIN")
            try other.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock))")
            XCTAssertThrowsError(
                try engine.transaction(scope: .zones([key(trips)])) { _ in
                    _ = try engine.accounts.create(emails: ["mallory@example.com"])
                },
                driver
            ) { error in
                XCTAssertTrue("\(error)".contains("busy: another writer holds the whole store (to write "), "\(driver): \(error)")
            }
            XCTAssertNil(try engine.accounts.find("mallory@example.com"), driver)
            // ... and its own zone it writes beside that writer.
            try engine.transaction(scope: .zones([key(trips)])) { _ in
                XCTAssertNil(
                    try alice.modifyRecords(saving: [Record(recordType: "T", recordID: RecordID(recordName: "t2", zoneID: trips))]).firstError,
                    driver
                )
            }
            try other.command("ROLLBACK")
            XCTAssertEqual(try alice.recordZoneChanges(trips).modifications.map(\.recordID.recordName).sorted(), ["t1", "t2"], driver)
        }
    }

    func testTheTableAWriteWritesIsReadFromItsStatement() {
        XCTAssertEqual(StoreWriteScope.writtenTable("INSERT INTO feed (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET seq = feed.seq + 1"), "feed")
        XCTAssertEqual(StoreWriteScope.writtenTable("INSERT OR IGNORE INTO account_email (email) VALUES (?)"), "account_email")
        XCTAssertEqual(StoreWriteScope.writtenTable("  UPDATE zone SET changeSeq = ? WHERE id = ?"), "zone")
        XCTAssertEqual(StoreWriteScope.writtenTable("DELETE FROM participant WHERE id = ?"), "participant")
        XCTAssertEqual(StoreWriteScope.writtenTable("WITH x AS (SELECT 1) UPDATE credential SET hash = ?"), "credential")
        XCTAssertNil(StoreWriteScope.writtenTable("SELECT 1"))
        for table in StoreWriteScope.tablesOfZones {
            XCTAssertTrue(StoreCatalogue.current.tables.contains { $0.name == table }, "\(table) is a table of the catalogue")
        }
    }

    /// Two nodes (two stores on one database), each writing its own zone: node A's write is
    /// held mid-way by a row lock taken from elsewhere, holding its zone; node B's write to
    /// another zone goes through meanwhile (with one lock for the whole cluster it waited for
    /// A). While A waits, the locks it holds are the cluster's lock shared and its zone's.
    func testWritesToDifferentZonesOnTwoNodesOverlap() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only: SQLite has one writer at a time") }
        let nodes = try TwoNodes(template: template, postgres: PostgresSettings(poolSize: 8, statementTimeoutMs: 300_000))
        defer { nodes.close() }
        let (nodeA, nodeB) = (nodes.a, nodes.b)
        _ = try nodeA.accounts.create(emails: ["alice@example.com"])
        _ = try nodeA.accounts.create(emails: ["bob@example.com"])
        let alice = try nodeA.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let bob = try nodeB.session(for: "bob@example.com").container("iCloud.t").privateCloudDatabase
        let zoneA = try alice.saveZone("Trips").zoneID
        let zoneB = try bob.saveZone("Trips").zoneID

        let holder = try XCTUnwrap(nodeA.store.driver as? PostgresStore).openSession(statementTimeoutMs: 300_000)
        defer { try? holder.connection.close().wait() }
        try holder.command("BEGIN")
        _ = try holder.query(
            "SELECT z.id FROM zone z JOIN account a ON a.id = z.ownerID WHERE a.userRecordID = ? AND z.name = 'Trips' FOR UPDATE OF z",
            [zoneA.ownerName.databaseValue]
        )

        let done = DispatchSemaphore(value: 0)
        let outcome = LockedBox<Result<ModifyResult, Error>?>(nil)
        let onNodeA = LockedBox(alice)
        Thread {
            outcome.value = Result {
                try onNodeA.value.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "a1", zoneID: zoneA))])
            }
            done.signal()
        }.start()
        // Until A's write waits on the row (an event, looked for; the ceiling only ends a hang).
        let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        let deadline = Date().addingTimeInterval(120)
        while try holder.query(waiting, []).first?.first?.storage != .int64(1) {
            XCTAssertLessThan(Date(), deadline, "node A's write never waited on the row")
            if Date() > deadline { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        // What A holds meanwhile: the cluster's lock shared, and one zone's lock (two-key).
        let held = try holder.query(
            """
            SELECT mode, objsubid FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND s.datname = current_database() ORDER BY objsubid
            """,
            []
        ).map { "\(String.fromDatabaseValue($0[0]) ?? "?")/\(Int64.fromDatabaseValue($0[1]) ?? -1)" }
        XCTAssertEqual(held, ["ShareLock/1", "ExclusiveLock/2"])

        // B writes its zone while A's write is open.
        XCTAssertNil(try bob.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "b1", zoneID: zoneB))]).firstError)
        XCTAssertEqual(done.wait(timeout: .now()), .timedOut, "node A's write was still waiting when node B's committed")
        XCTAssertEqual(try bob.recordZoneChanges(zoneB).modifications.map(\.recordID.recordName), ["b1"])

        try holder.command("ROLLBACK")
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success)
        XCTAssertNil(try outcome.value?.get().firstError)
        XCTAssertEqual(try alice.recordZoneChanges(zoneA).modifications.map(\.recordID.recordName), ["a1"])
        // Each owner's database feed has its zone.
        XCTAssertEqual(try alice.databaseChanges().changedZoneIDs.map(\.zoneName), ["Trips"])
        XCTAssertEqual(try bob.databaseChanges().changedZoneIDs.map(\.zoneName), ["Trips"])
    }
}

extension ScopedWriteTests {
    /// A request's first write that finds its zone held elsewhere asks for that zone's lock on
    /// the node's spare connection and is run again when it comes (SPEC §16 M5); meanwhile a
    /// request writing another zone on that node goes through at once, and one writing the
    /// same zone waits for that answer too.
    func testAWriteWaitingForOneZoneHoldsUpNoWriteOfAnother() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only: SQLite has one writer at a time") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let node = Engine(store: try Store.open(url))
        defer { node.store.close() }
        _ = try node.accounts.create(emails: ["alice@example.com"])
        let alice = try node.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let trips = try alice.saveZone("Trips").zoneID
        let notes = try alice.saveZone("Notes").zoneID
        let record = { (name: String, zone: RecordZoneID) in Record(recordType: "R", recordID: RecordID(recordName: name, zoneID: zone)) }

        // Another node is writing Trips.
        let other = try XCTUnwrap(node.store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        defer { try? other.connection.close().wait() }
        let (high, low) = ZoneLockKey(container: alice.container.containerID, ownerName: trips.ownerName, zoneName: trips.zoneName).halves
        try other.command("BEGIN")
        try other.command("SELECT pg_advisory_xact_lock_shared(\(PostgresStore.writeLock)), pg_advisory_xact_lock(\(high), \(low))")

        node.store.writeWait = .deferFirst
        XCTAssertThrowsError(try alice.modifyRecords(saving: [record("t1", trips)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
        let onReady = try XCTUnwrap(node.store.deferredBy?.onReady)
        // Another request, another zone: through at once.
        node.store.writeWait = .deferFirst
        XCTAssertNil(try alice.modifyRecords(saving: [record("n1", notes)]).firstError)
        // Another request, the same zone: waits for the answer too.
        node.store.writeWait = .deferFirst
        XCTAssertThrowsError(try alice.modifyRecords(saving: [record("t2", trips)])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }

        try other.command("ROLLBACK")
        let ready = DispatchSemaphore(value: 0)
        onReady { ready.signal() }
        XCTAssertEqual(ready.wait(timeout: .now() + 60), .success, "the zone's lock came once it was let go")
        node.store.writeWait = .deferFirst
        XCTAssertNil(try alice.modifyRecords(saving: [record("t1", trips)]).firstError)
        XCTAssertEqual(node.store.writeWait, .inPlace)
        XCTAssertEqual(try alice.recordZoneChanges(trips).modifications.map(\.recordID.recordName), ["t1"])
        XCTAssertEqual(try alice.recordZoneChanges(notes).modifications.map(\.recordID.recordName), ["n1"])
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
        let nodes = try TwoNodes(template: template)
        defer { nodes.close(removingPoliciesNamed: "peek") }
        let (nodeA, nodeB) = (nodes.a, nodes.b)
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
}
