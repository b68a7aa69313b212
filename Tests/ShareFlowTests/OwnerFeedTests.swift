import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// The owner's feed of a zone (the record table at its positions, tombstones apart) and the
/// zone's position counter, taken in memory and written at commit: names deleted and made
/// again, superseded tombstones and their pruning, savepoints rolled back, two stores on one
/// file, zones made again. Readers following tokens (the owner's, and participants' where the
/// zone is shared; pages of one and more) stay equal to a full fetch, and no position is ever
/// handed out twice.
class OwnerFeedTests: XCTestCase {
    // MARK: Delete and make again

    /// A name deleted and made again in one transaction (and made, deleted, made again; made
    /// and deleted), in a shared hierarchy and a shared zone: owner and participants, reading
    /// a page of one or of many from tokens taken before, converge.
    func testDeleteAndMakeAgainInOneTransaction() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let share = try w.share(["bob@example.com"])
        try w.accept(share.url!, in: w.bc)
        let flat = try owner.saveZone("Flat").zoneID
        let zoneShare = Share(zoneID: flat)
        zoneShare.addParticipant(try w.participant("carol@example.com"))
        _ = try owner.modifyRecords(saving: [item("f1", flat), item("f2", flat), zoneShare])
        try w.accept((try owner.fetchRecord(zoneShare.recordID) as! Share).url!, in: w.cc)
        let zones = [w.zone.zoneID, flat]
        let store = w.engine.store
        for limit in [1, 2, 200] {
            let replicas = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
            for r in replicas { try assertConverged(r, zones: zones, store: store, limit: limit, "start") }
            func check(_ what: String) throws {
                for r in replicas { try assertConverged(r, zones: zones, store: store, limit: limit, "limit \(limit) \(what)") }
                try assertPositionsSound(store, what)
            }
            // Deleted and made again, in one transaction.
            try w.engine.transaction { _ in
                _ = try owner.modifyRecords(deleting: [w.day.recordID, RecordID(recordName: "f1", zoneID: flat)])
                _ = try owner.modifyRecords(saving: [
                    item("day1", w.zone.zoneID, parent: w.trip.recordID, n: Int64(limit)),
                    item("f1", flat, n: Int64(limit)),
                ])
            }
            try check("deleted and made again")
            // Made, deleted, made again; and made then deleted.
            try w.engine.transaction { _ in
                _ = try owner.modifyRecords(saving: [
                    item("x\(limit)", w.zone.zoneID, parent: w.trip.recordID), item("y\(limit)", flat),
                    item("z\(limit)", flat),
                ])
                _ = try owner.modifyRecords(deleting: [
                    RecordID(recordName: "x\(limit)", zoneID: w.zone.zoneID), RecordID(recordName: "y\(limit)", zoneID: flat),
                    RecordID(recordName: "z\(limit)", zoneID: flat),
                ])
                _ = try owner.modifyRecords(saving: [item("x\(limit)", w.zone.zoneID, parent: w.trip.recordID, n: 7), item("y\(limit)", flat, n: 7)])
            }
            try check("made, deleted, made again")
            // Deleted in one transaction, made again (out of the hierarchy) in the next.
            _ = try owner.modifyRecords(deleting: [RecordID(recordName: "x\(limit)", zoneID: w.zone.zoneID)])
            try check("deleted")
            _ = try owner.modifyRecords(saving: [item("x\(limit)", w.zone.zoneID, n: 8)])
            try check("made again outside the hierarchy")
            // Moved back in, by a participant's save of a record under it.
            let mine = try owner.fetchRecord(RecordID(recordName: "x\(limit)", zoneID: w.zone.zoneID))
            mine.parent = w.trip.recordID
            _ = try owner.modifyRecords(saving: [mine])
            try check("moved back into the hierarchy")
            // One call both saving and deleting the same name, if the engine takes it.
            _ = try? owner.modifyRecords(
                saving: [item("f2", flat, n: 9)],
                deleting: [RecordID(recordName: "f2", zoneID: flat)],
                savePolicy: .allKeys
            )
            try check("saved and deleted in one call")
        }
    }

    /// A reader from before a deletion, paging one entry at a time across the superseded
    /// tombstone and the records after it, and `currentChangeToken` with tombstones above the
    /// last record: nothing lost, nothing twice, no empty page that is not the last.
    func testPagesOfOneAcrossSupersededTombstonesAndTombstonesOnTop() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = w.zone.zoneID
        _ = try db.modifyRecords(saving: (1...4).map { item("r\($0)", zone) })
        let start = try db.currentChangeToken(zone)
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "r2", zoneID: zone)])
        _ = try db.modifyRecords(saving: [item("r2", zone, n: 2), item("r5", zone)])
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "r3", zoneID: zone), RecordID(recordName: "r4", zoneID: zone)])
        // The last entries are tombstones: the current token is past them.
        let current = try db.currentChangeToken(zone)
        let fromCurrent = try db.recordZoneChanges(zone, since: current)
        XCTAssertEqual(fromCurrent.modifications.count + fromCurrent.deletions.count, 0)
        XCTAssertFalse(fromCurrent.moreComing)
        var token: String? = start
        var more = true
        var seen: [String] = []
        while more {
            let page = try db.recordZoneChanges(zone, since: token, resultsLimit: 1)
            seen += page.modifications.map(\.recordID.recordName) + page.deletions.map { "-" + $0.0.recordName }
            XCTAssertTrue(page.modifications.count + page.deletions.count == 1 || !page.moreComing, "an empty page with more coming")
            (token, more) = (page.changeToken, page.moreComing)
        }
        XCTAssertEqual(seen, ["r2", "r5", "-r3", "-r4"])
        XCTAssertEqual(try db.recordZoneChanges(zone, since: token).modifications.count, 0)
        // Deleted again: the tombstone moves past the record's old position.
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "r2", zoneID: zone)])
        XCTAssertEqual(try db.recordZoneChanges(zone, since: token).deletions.map(\.0.recordName), ["r2"])
        XCTAssertEqual(try db.recordZoneChanges(zone, since: current).deletions.map(\.0.recordName), ["r2"])
    }

    /// Retention with a superseded tombstone: pruning it expires only tokens from before it;
    /// a reader from after it, and a first sync, still converge.
    func testPruningASupersededTombstone() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = w.zone.zoneID
        let store = w.engine.store
        _ = try db.modifyRecords(saving: [item("a", zone), item("b", zone)])
        let before = try db.currentChangeToken(zone)
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "a", zoneID: zone)])
        let between = try db.currentChangeToken(zone)
        _ = try db.modifyRecords(saving: [item("a", zone, n: 1)])
        let reader = FeedReplica(db)
        try assertConverged(reader, zones: [zone], store: store, limit: 1, "before pruning")
        _ = try store.write { try $0.pruneChangeLog(before: Date().timeIntervalSince1970 + 10) }
        XCTAssertThrowsError(try db.recordZoneChanges(zone, since: before)) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .changeTokenExpired)
        }
        XCTAssertEqual(try db.recordZoneChanges(zone, since: between).modifications.map(\.recordID.recordName), ["a"])
        _ = try db.modifyRecords(saving: [item("c", zone)])
        try assertConverged(reader, zones: [zone], store: store, limit: 1, "after pruning")
        try assertConverged(FeedReplica(db), zones: [zone], store: store, limit: 1, "first sync after pruning")
        try assertPositionsSound(store, "pruned")
    }

    // MARK: Nested writes

    /// Savepoints rolled back (a nested transaction that fails, a failing record of a
    /// non-atomic batch) between saves that stay: no position twice, the counter past every
    /// one, tokens never going back, and readers converge.
    func testRolledBackSavepointsHandOutNoPositionTwice() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        try w.accept(share.url!, in: w.bc)
        let zone = w.zone.zoneID
        let store = w.engine.store
        let replicas = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase)]
        var tokens: [String] = [try owner.currentChangeToken(zone)]
        func check(_ what: String) throws {
            for r in replicas { try assertConverged(r, zones: [zone], store: store, limit: 1, what) }
            try assertPositionsSound(store, what)
            let token = try owner.currentChangeToken(zone)
            // Tokens move forward: a fetch from the last one holds nothing from before it.
            for old in tokens { _ = try owner.recordZoneChanges(zone, since: old) }
            tokens.append(token)
        }
        struct Boom: Error {}
        for round in 0..<3 {
            try w.engine.transaction { _ in
                _ = try owner.modifyRecords(saving: [item("a\(round)", zone, parent: w.trip.recordID)])
                XCTAssertThrowsError(
                    try w.engine.transaction { _ in
                        _ = try owner.modifyRecords(saving: [item("lost\(round)", zone, parent: w.trip.recordID)])
                        _ = try owner.modifyRecords(deleting: [RecordID(recordName: "a\(round)", zoneID: zone)])
                        throw Boom()
                    }
                )
                _ = try owner.modifyRecords(saving: [item("b\(round)", zone, parent: w.trip.recordID)])
            }
            try check("round \(round): nested rollback")
            // A stale record in the middle of a non-atomic batch: it alone fails.
            let stale = try owner.fetchRecord(RecordID(recordName: "b\(round)", zoneID: zone))
            let fresh = try owner.fetchRecord(RecordID(recordName: "b\(round)", zoneID: zone))
            fresh["n"] = .integer(99)
            _ = try owner.modifyRecords(saving: [fresh])
            stale["n"] = .integer(1)
            let result = try owner.modifyRecords(
                saving: [item("c\(round)", zone, parent: w.trip.recordID), stale, item("d\(round)", zone)],
                atomically: false
            )
            XCTAssertEqual(result.error(for: stale)?.code, .serverRecordChanged)
            try check("round \(round): non-atomic batch")
            // A guest's non-atomic batch with a failing record (one they cannot write: outside the share).
            let theirs = try w.bc.sharedCloudDatabase.fetchRecord(RecordID(recordName: "a\(round)", zoneID: zone))
            theirs["g"] = .string("guest")
            _ = try w.bc.sharedCloudDatabase.modifyRecords(
                saving: [theirs, item("d\(round)", zone, n: 5), item("e\(round)", zone, parent: w.trip.recordID)],
                atomically: false
            )
            try check("round \(round): guest's non-atomic batch")
        }
    }

    /// Random batches over a few names made, deleted and made again, in nested transactions
    /// some of which fail, in a zone shared whole and one with hierarchy shares: owner and
    /// participants converge, pages of one to four, and no position is used twice.
    func testNamesMadeAgainInNestedTransactionsConverge() throws {
        for seed: UInt64 in TestStore.seeds([1, 2, 3, 4]) {
            var rng = SeededRandom(seed: seed)
            let w = try World()
            let owner = w.c.privateCloudDatabase
            let store = w.engine.store
            let rooted = w.zone.zoneID
            let flat = try owner.saveZone("Flat").zoneID
            let share = try w.share(["bob@example.com", "carol@example.com"], permission: .readWrite)
            try w.accept(share.url!, in: w.bc)
            let zoneShare = Share(zoneID: flat)
            zoneShare.addParticipant(try w.participant("carol@example.com", permission: .readWrite))
            _ = try owner.modifyRecords(saving: [zoneShare])
            try w.accept((try owner.fetchRecord(zoneShare.recordID) as! Share).url!, in: w.cc)
            let zones = [rooted, flat]
            let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
            let pool = ["p0", "p1", "p2", "p3", "p4", "p5"]
            struct Boom: Error {}
            func randomChange() throws {
                let zone = zones.randomElement(using: &rng)!
                let name = pool.randomElement(using: &rng)!
                let id = RecordID(recordName: name, zoneID: zone)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: _ = try owner.modifyRecords(deleting: [id])
                case 1:
                    let parent: RecordID? =
                        zone == rooted && Bool.random(using: &rng)
                        ? w.trip.recordID
                        : Bool.random(using: &rng) ? RecordID(recordName: pool.randomElement(using: &rng)!, zoneID: zone) : nil
                    let r = (try? owner.fetchRecord(id)) ?? item(name, zone)
                    r["n"] = .integer(Int64.random(in: 0..<1000, using: &rng))
                    if parent != id { r.parent = parent }
                    _ = try owner.modifyRecords(saving: [r])
                case 2:
                    let guest = zone == flat ? w.cc.sharedCloudDatabase : [w.bc, w.cc].randomElement(using: &rng)!.sharedCloudDatabase
                    let r = (try? guest.fetchRecord(id)) ?? item(name, zone, parent: zone == rooted ? w.trip.recordID : nil)
                    r["g"] = .integer(Int64.random(in: 0..<1000, using: &rng))
                    _ = try guest.modifyRecords(saving: [r])
                default:
                    _ = try owner.modifyRecords(saving: [item(name, zone, n: 5)], deleting: [id], savePolicy: .allKeys, atomically: false)
                }
            }
            for step in 0..<60 {
                do {
                    try w.engine.transaction { _ in
                        for _ in 0..<Int.random(in: 1...4, using: &rng) {
                            if Int.random(in: 0..<4, using: &rng) == 0 {
                                try? w.engine.transaction { _ in
                                    try? randomChange()
                                    try? randomChange()
                                    if Bool.random(using: &rng) { throw Boom() }
                                }
                            } else {
                                try? randomChange()
                            }
                        }
                    }
                }
                let limit = Int.random(in: 1...4, using: &rng)
                for r in readers { try assertConverged(r, zones: zones, store: store, limit: limit, "seed \(seed) step \(step)") }
                try assertPositionsSound(store, "seed \(seed) step \(step)")
            }
        }
    }

    // MARK: Two stores on one file

    /// Two stores (two connections, as two processes) writing the same zone in turn and at
    /// once: positions unique and in commit order, and a reader through either converges.
    func testTwoStoresOnOneFileInterleave() throws {
        let dir = try makeTemporaryFolder("sf-v9")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.sqlite").path
        let w = try World(engine: Engine(store: try Store(path: path)))
        let other = Engine(store: try Store(path: path))
        let one = w.c.privateCloudDatabase
        let two = try other.session(for: "alice@example.com").container(World.containerID).privateCloudDatabase
        let zone = w.zone.zoneID
        let share = try w.share(["bob@example.com"])
        try w.accept(share.url!, in: w.bc)
        let replicas = [FeedReplica(one), FeedReplica(two), FeedReplica(w.bc.sharedCloudDatabase)]
        for i in 0..<6 {
            _ = try one.modifyRecords(saving: [item("one\(i)", zone, parent: w.trip.recordID)])
            _ = try two.modifyRecords(saving: [item("two\(i)", zone, parent: i % 2 == 0 ? w.trip.recordID : nil)])
            if i % 3 == 2 { _ = try two.modifyRecords(deleting: [RecordID(recordName: "one\(i - 1)", zoneID: zone)]) }
            for r in replicas { try assertConverged(r, zones: [zone], store: w.engine.store, limit: 2, "step \(i)") }
        }
        // At once, from two threads.
        let group = DispatchGroup()
        let failures = Unchecked(0)
        let lock = NSLock()
        for (k, db) in [one, two].enumerated() {
            let job = Unchecked({
                for i in 0..<20 {
                    do { _ = try db.modifyRecords(saving: [self.item("t\(k)-\(i)", zone, parent: i % 2 == 0 ? w.trip.recordID : nil)]) } catch {
                        lock.withLock { failures.value += 1 }
                    }
                }
            })
            group.enter()
            DispatchQueue.global().async {
                job.value()
                group.leave()
            }
        }
        group.wait()
        for r in replicas { try assertConverged(r, zones: [zone], store: w.engine.store, limit: 3, "at once (\(failures.value) refused)") }
        try assertPositionsSound(w.engine.store, "two stores")
        try assertPositionsSound(other.store, "two stores, the other")
    }

    // MARK: Zones

    /// A zone deleted and made again under its name: a token of the old zone never reads the
    /// new one from the middle (it is expired, or reads it whole).
    func testAZoneMadeAgainIsNotReadFromAnOldToken() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = try db.saveZone("Again").zoneID
        _ = try db.modifyRecords(saving: (1...5).map { item("old\($0)", zone) })
        let old = try db.currentChangeToken(zone)
        try db.deleteZone(zone)
        _ = try db.saveZone("Again")
        _ = try db.modifyRecords(saving: (1...8).map { item("new\($0)", zone) })
        do {
            let changes = try db.recordZoneChanges(zone, since: old)
            XCTAssertEqual(
                changes.modifications.map(\.recordID.recordName).sorted(),
                (1...8).map { "new\($0)" }.sorted(),
                "an old zone's token read the new zone from the middle"
            )
        } catch let e as ShareFlowError {
            XCTAssertEqual(e.code, .changeTokenExpired, "\(e)")
        }
    }

    /// A zone deleted after saves in the same transaction, and made again in it: the counter
    /// written at commit lands on no row, or on the new zone past nothing it holds.
    func testAZoneDeletedAndMadeAgainInOneTransaction() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = try db.saveZone("Brief").zoneID
        _ = try db.modifyRecords(saving: [item("a", zone)])
        try w.engine.transaction { _ in
            _ = try db.modifyRecords(saving: [item("b", zone), item("c", zone)])
            try db.deleteZone(zone)
        }
        try assertPositionsSound(store, "deleted after saves")
        _ = try db.saveZone("Brief")
        try w.engine.transaction { _ in
            _ = try db.modifyRecords(saving: [item("d", zone)])
            try db.deleteZone(zone)
            _ = try db.saveZone("Brief")
            _ = try db.modifyRecords(saving: [item("e", zone)])
        }
        try assertPositionsSound(store, "deleted and made again")
        let reader = FeedReplica(db)
        try assertConverged(reader, zones: [zone], store: store, limit: 1, "made again")
        _ = try db.modifyRecords(saving: [item("f", zone)])
        try assertConverged(reader, zones: [zone], store: store, limit: 1, "after")
        XCTAssertEqual(reader.zones[zone]?.records.keys.sorted(), ["e", "f"])
    }

    // MARK: Invitations

    /// An invitation by an address no account had, matched when an account adds it (R17):
    /// the share's record changes (its tag is renewed), so the owner's feed sends it again.
    func testAnInvitationMatchedToANewAddressMovesTheSharesRecord() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let share = Share(rootRecord: w.trip)
        let (results, error) = w.c.fetchShareParticipantResults([LookupRequest(emailAddress: "dave@example.com")])
        XCTAssertNil(error)
        share.addParticipant(try results[0].1.get())
        _ = try owner.modifyRecords(saving: [w.trip, share])
        let reader = FeedReplica(owner)
        try assertConverged(reader, zones: [w.zone.zoneID], store: w.engine.store, limit: 1, "invited")
        _ = try w.engine.accounts.addEmail("dave@example.com", to: w.carol)
        try assertConverged(reader, zones: [w.zone.zoneID], store: w.engine.store, limit: 1, "invitation matched")
    }
}

extension OwnerFeedTests: FeedChecks {}

/// A value handed to another thread by a test that knows it is used by one at a time.
private final class Unchecked<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
