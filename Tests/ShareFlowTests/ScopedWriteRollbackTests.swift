import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// Savepoints rolled back inside a zone-scoped write (SPEC §16 M5): a failed savepoint that read
/// a feed, a rolled-back claim of another zone, nested policies' savepoints. What each took (feed
/// moves, zones, positions) is forgotten or kept as the commit needs: no committed save missing
/// from a feed, no zone's counter written without its lock, no position handed out twice.
/// PostgreSQL, but for the feed read inside a savepoint (both drivers).
final class ScopedWriteRollbackTests: XCTestCase {
    func rec(_ name: String, _ zone: RecordZoneID) -> Record { Self.rec(name, zone) }
    static func rec(_ name: String, _ zone: RecordZoneID) -> Record {
        Record(recordType: "T", recordID: RecordID(recordName: name, zoneID: zone))
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

    /// A savepoint that claimed another zone and took positions in it, then rolled back, lets
    /// go of that zone's lock (PostgreSQL releases a rolled-back subtransaction's locks) but
    /// the positions stay in `FeedBumps.seqs` ("not given back"): at commit the write sets that
    /// zone's counter (`writeLogPositions`) without holding its lock. Another node wrote the
    /// zone in between: the counter goes back, and positions are handed out twice.
    func testARolledBackClaimStillWritesThatZonesCounterAtCommit() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let nodes = try TwoNodes(template: template)
        defer { nodes.close(removingPoliciesNamed: "meddle") }
        let nodeA = nodes.a
        let (aliceA, aliceB) = try nodes.alice()
        let z1 = try aliceA.saveZone("Z1").zoneID
        let z2 = try aliceA.saveZone("Z2").zoneID
        XCTAssertNil(try aliceA.modifyRecords(saving: [rec("z2a", z2)]).firstError)  // Z2 at 1

        let calls = LockedBox(0)
        let bDone = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let inner = LockedBox(aliceA)
        _ = nodeA.policies.add(.shareSave, name: "meddle") { _ in
            calls.update { $0 += 1 }
            if calls.value == 1 {
                // The policy writes Alice's other zone, then says no: its savepoint rolls back.
                _ = try? inner.value.modifyRecords(saving: [Self.rec("fromPolicy", z2)])
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
                    saving: ["b1", "b2", "b3"].map { Self.rec($0, z2) }
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

    /// Nested policies: A's batch in Z1 saves share S1; its policy saves share S2 in Z2 (a
    /// nested modify, Z2 claimed); S2's save asks the policy again, which writes Z3 (claimed,
    /// positions taken) and denies S2: the savepoint of S2's save rolls back Z2's share and Z3's
    /// write, and Z3's lock with them. Node B then writes Z3 while A's batch is open. Afterwards
    /// Z3's counter and feed are whole, and Z2's position counter is not behind its rows.
    func testNestedPolicySavepointsRolledBackForgetTheirZones() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let nodes = try TwoNodes(template: template)
        defer { nodes.close(removingPoliciesNamed: "nest") }
        let nodeA = nodes.a
        let (alice, aliceB) = try nodes.alice()
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
