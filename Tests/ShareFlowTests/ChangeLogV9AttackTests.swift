import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// Schema v9's owner feed (the record table at its positions, tombstones apart), its counters
/// taken in memory and written at commit, the flat-zone viewer cache and the accept path's
/// shortcuts, attacked: readers following tokens (owner and participants, pages of one and
/// more) stay equal to a full fetch, and no position is ever handed out twice.
class ChangeLogV9AttackTests: XCTestCase {
    // MARK: Helpers

    /// What `db` fetches now of the zone's records (every name the store has ever held there):
    /// name → change tag, and fields for a plain record.
    private func truth(_ db: CloudDatabase, zone: RecordZoneID, store: Store) throws -> [String: FeedReplica.Copy] {
        let names = try store.read { tx in
            try tx.texts(
                """
                SELECT r.name FROM record r JOIN zone z ON z.id = r.zoneID WHERE z.name = ? AND z.scope = 'private'
                UNION SELECT l.name FROM zone_change l JOIN zone z ON z.id = l.zoneID WHERE z.name = ?
                UNION SELECT l.name FROM view_change l JOIN zone z ON z.id = l.zoneID WHERE z.name = ?
                """,
                [zone.zoneName, zone.zoneName, zone.zoneName]
            )
        }
        var found: [String: FeedReplica.Copy] = [:]
        for name in names {
            guard let r = try? db.fetchRecord(RecordID(recordName: name, zoneID: zone)) else { continue }
            found[name] = FeedReplica.Copy(tag: r.recordChangeTag!, fields: r is Share ? [:] : r.fields, parent: r.parent?.recordName)
        }
        return found
    }

    private func assertConverged(
        _ replica: FeedReplica,
        zones: [RecordZoneID],
        store: Store,
        limit: Int,
        _ what: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        try replica.follow(limit: limit)
        for zone in zones {
            let expected = try truth(replica.db, zone: zone, store: store)
            let copy = replica.zones[zone]?.records ?? [:]
            XCTAssertEqual(copy, expected, "\(what): \(zone.zoneName) (\(replica.db.databaseScope))", file: file, line: line)
        }
    }

    /// No position twice in a feed, none above its zone's counter, none at 0 in a private zone.
    private func assertPositionsSound(_ store: Store, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try store.read { tx in
            let twice = try tx.rows(
                """
                SELECT zoneID, seq, COUNT(*) FROM (
                    SELECT zoneID, seq FROM record WHERE seq > 0
                    UNION ALL SELECT l.zoneID, l.seq FROM zone_change l
                    WHERE NOT EXISTS (SELECT 1 FROM record x WHERE x.zoneID = l.zoneID AND x.name = l.name)) t
                GROUP BY 1, 2 HAVING COUNT(*) > 1
                """
            )
            XCTAssertEqual(twice.count, 0, "\(what): owner positions twice \(twice)", file: file, line: line)
            let viewerTwice = try tx.rows("SELECT zoneID, viewerID, seq, COUNT(*) FROM view_change GROUP BY 1, 2, 3 HAVING COUNT(*) > 1")
            XCTAssertEqual(viewerTwice.count, 0, "\(what): viewer positions twice \(viewerTwice)", file: file, line: line)
            let above = try tx.rows(
                """
                SELECT * FROM (
                    SELECT z.id, z.changeSeq, MAX(COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = z.id), 0),
                                                   COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = z.id), 0),
                                                   COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = z.id), 0)) AS top
                    FROM zone z) t
                WHERE top > changeSeq
                """
            )
            XCTAssertEqual(above.count, 0, "\(what): positions above the counter \(above)", file: file, line: line)
            let unplaced = try tx.rows("SELECT r.name FROM record r JOIN zone z ON z.id = r.zoneID WHERE z.scope = 'private' AND r.seq = 0")
            XCTAssertEqual(unplaced.count, 0, "\(what): private records at no position \(unplaced)", file: file, line: line)
        }
    }

    private func item(_ name: String, _ zone: RecordZoneID, parent: RecordID? = nil, n: Int64 = 0) -> ShareFlow.Record {
        ShareFlow.Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone), fields: ["n": .integer(n)], parent: parent)
    }

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

    // MARK: Flat and rooted zones

    /// In a zone with no rooted share (saves read its viewers once), a share made in the same
    /// transaction as earlier saves, children moved under its root in it and after, accepted
    /// later; then records moved into and out of the hierarchy: participants converge.
    func testAShareMadeInATransactionThatSavedInAFlatZone() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = try owner.saveZone("Was flat").zoneID
        _ = try owner.modifyRecords(saving: [item("loose", zone), item("kid", zone)])
        let root = item("root", zone)
        let share = Share(rootRecord: root)
        share.addParticipant(try w.participant("bob@example.com"))
        share.addParticipant(try w.participant("carol@example.com", permission: .readWrite))
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(saving: [item("before", zone)])
            _ = try owner.modifyRecords(saving: [root, share, item("under", zone, parent: root.recordID)])
            let kid = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            kid.parent = root.recordID
            _ = try owner.modifyRecords(saving: [kid, item("after", zone, parent: root.recordID)])
        }
        let replicas = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for r in replicas { try assertConverged(r, zones: [zone], store: store, limit: 1, what) }
            try assertPositionsSound(store, what)
        }
        try check("shared, not accepted")
        let url = (try owner.fetchRecord(share.recordID) as! Share).url!
        try w.accept(url, in: w.bc)
        try check("bob accepted")
        // Moved out and in again in one transaction, and a loose record in.
        try w.engine.transaction { _ in
            let kid = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            kid.parent = nil
            _ = try owner.modifyRecords(saving: [kid])
            let loose = try owner.fetchRecord(RecordID(recordName: "loose", zoneID: zone))
            loose.parent = RecordID(recordName: "under", zoneID: zone)
            _ = try owner.modifyRecords(saving: [loose])
            try w.accept(url, in: w.cc)
            let again = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            again.parent = RecordID(recordName: "loose", zoneID: zone)
            _ = try owner.modifyRecords(saving: [again])
        }
        try check("moved and carol accepted in one transaction")
        // The share deleted, and a zone share made in the same transaction.
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(deleting: [share.recordID])
            let zoneShare = Share(zoneID: zone)
            zoneShare.addParticipant(try w.participant("bob@example.com"))
            _ = try owner.modifyRecords(saving: [zoneShare, item("in zone share", zone)])
        }
        try check("a zone share for the rooted one")
        let zoneShare = try owner.fetchRecord(RecordID(recordName: Share.zoneShareName, zoneID: zone))
        try w.accept((zoneShare as! Share).url!, in: w.bc)
        try check("bob accepted the zone share")
        // Moves in a flat zone shared whole: each viewer sees every record wherever it is.
        try w.engine.transaction { _ in
            let loose = try owner.fetchRecord(RecordID(recordName: "loose", zoneID: zone))
            loose.parent = nil
            _ = try owner.modifyRecords(saving: [loose, item("new under kid", zone, parent: RecordID(recordName: "kid", zoneID: zone))])
        }
        try check("moves in the flat zone")
        // The zone share gone, a rooted one made again over the old root, in one transaction.
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(deleting: [zoneShare.recordID])
            let top = try owner.fetchRecord(RecordID(recordName: "root", zoneID: zone))
            let again = Share(rootRecord: top)
            again.addParticipant(try w.participant("carol@example.com"))
            _ = try owner.modifyRecords(saving: [top, again, item("late", zone, parent: top.recordID)])
        }
        try check("rooted again")
    }

    // MARK: Accept paths

    /// Accepts, leaving, removal, permission changes and a public share's joiners, each
    /// followed by the participants' readers: the accepting one is not sent the share's record
    /// twice and the others' views are not looked at again — every reader still converges.
    func testAcceptLeaveRemoveAndPermissionSequencesConverge() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let share = try w.share(["bob@example.com"])
        _ = try owner.modifyRecords(saving: [
            item("other root", zone), item("other kid", zone, parent: RecordID(recordName: "other root", zoneID: zone)),
        ])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for limit in [1, 5] {
                for r in readers { try assertConverged(r, zones: [zone], store: store, limit: limit, what) }
            }
            try assertPositionsSound(store, what)
        }
        func current() throws -> Share { try owner.fetchRecord(share.recordID) as! Share }
        let url = share.url!
        try check("start")
        try w.accept(url, in: w.bc)
        try check("bob accepted")
        var s = try current()
        s.publicPermission = .readOnly
        _ = try owner.modifyRecords(saving: [s])
        try check("made public")
        try w.accept(url, in: w.cc)
        try check("carol joined as a public user")
        s = try current()
        s.participants.first { $0.userIdentity.userRecordID == w.bob.userRecordID }?.permission = .readWrite
        _ = try owner.modifyRecords(saving: [s])
        try check("bob's permission raised")
        s = try current()
        s.publicPermission = .readWrite
        _ = try owner.modifyRecords(saving: [s])
        try check("public permission raised")
        s = try current()
        s.publicPermission = .none
        _ = try? owner.modifyRecords(saving: [s])
        try check("public permission none")
        // Bob leaves; is added again; accepts again.
        _ = try w.bc.sharedCloudDatabase.modifyRecords(deleting: [share.recordID])
        try check("bob left")
        s = try current()
        if let bob = s.participants.first(where: { $0.userIdentity.userRecordID == w.bob.userRecordID }) { s.removeParticipant(bob) }
        s.addParticipant(try w.participant("bob@example.com"))
        _ = try? owner.modifyRecords(saving: [s])
        try check("bob added again")
        _ = try? w.accept(url, in: w.bc)
        try check("bob accepted again")
        // Removed by the owner while a record changes in the same transaction.
        try w.engine.transaction { _ in
            let s = try current()
            if let bob = s.participants.first(where: { $0.userIdentity.userRecordID == w.bob.userRecordID }) { s.removeParticipant(bob) }
            let day = try owner.fetchRecord(w.day.recordID)
            day["note"] = .string("edited")
            _ = try owner.modifyRecords(saving: [day, s])
        }
        try check("bob removed with an edit")
        // Carol accepts a second share in the zone while she reads the first.
        let second = Share(rootRecord: try owner.fetchRecord(RecordID(recordName: "other root", zoneID: zone)))
        second.addParticipant(try w.participant("carol@example.com"))
        second.addParticipant(try w.participant("bob@example.com"))
        _ = try owner.modifyRecords(saving: [try owner.fetchRecord(RecordID(recordName: "other root", zoneID: zone)), second])
        try w.accept((try owner.fetchRecord(second.recordID) as! Share).url!, in: w.cc)
        try check("carol accepted a second share")
        try w.accept((try owner.fetchRecord(second.recordID) as! Share).url!, in: w.bc)
        try check("bob accepted the second share")
        _ = try w.cc.sharedCloudDatabase.modifyRecords(deleting: [second.recordID])
        try check("carol left the second share")
    }

    /// An accept in the same transaction as saves of the share's records (so the accepting
    /// participant's view and the records' entries move together), and two participants
    /// accepting in one transaction.
    func testAcceptsInsideATransactionWithSaves() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let share = try w.share(["bob@example.com", "carol@example.com"])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, "start") }
        try w.engine.transaction { _ in
            let trip = try owner.fetchRecord(w.trip.recordID)
            trip["title"] = .string("before the accept")
            _ = try owner.modifyRecords(saving: [trip, item("new", zone, parent: w.trip.recordID)])
            try w.accept(share.url!, in: w.bc)
            let day = try owner.fetchRecord(w.day.recordID)
            day["n"] = .integer(3)
            _ = try owner.modifyRecords(saving: [day])
            try w.accept(share.url!, in: w.cc)
            let trip2 = try owner.fetchRecord(w.trip.recordID)
            trip2["title"] = .string("after the accepts")
            _ = try owner.modifyRecords(saving: [trip2])
        }
        for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, "accepts with saves") }
        try assertPositionsSound(store, "accepts with saves")
    }

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

    /// A share's root deleted and made again under its name (alone, and with children named
    /// under it before it exists again), and a root without children gaining one: the
    /// accept path's shortcuts for a childless root still give each participant their view.
    func testARootDeletedAndMadeAgain() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let lone = item("lone", zone)
        let share = Share(rootRecord: lone)
        share.addParticipant(try w.participant("bob@example.com"))
        _ = try owner.modifyRecords(saving: [lone, share])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, what) }
            try assertPositionsSound(store, what)
        }
        try w.accept((try owner.fetchRecord(share.recordID) as! Share).url!, in: w.bc)
        try check("accepted a childless root")
        _ = try owner.modifyRecords(saving: [item("child", zone, parent: lone.recordID)])
        try check("a child")
        _ = try? owner.modifyRecords(deleting: [lone.recordID])
        try check("root deleted")
        try w.engine.transaction { _ in
            _ = try? owner.modifyRecords(saving: [item("orphan", zone, parent: lone.recordID)])
            _ = try? owner.modifyRecords(saving: [item("lone", zone, n: 3)])
        }
        try check("root made again, a child named before it")
        let again = Share(rootRecord: try owner.fetchRecord(lone.recordID))
        again.addParticipant(try w.participant("bob@example.com"))
        _ = try? owner.modifyRecords(saving: [try owner.fetchRecord(lone.recordID), again])
        try check("shared again")
        if let url = (try? owner.fetchRecord(again.recordID) as? Share)?.url { _ = try? w.accept(url, in: w.bc) }
        try check("accepted again")
    }

    // MARK: Migration

    /// A v8 store whose owner's log holds a live entry for a record gone (another program
    /// deleted it), and whose zone counter is below its entries' positions: after v9, a
    /// reader from before the entry is told of the deletion, no position is used twice, and
    /// a save is past every entry.
    func testAV8StoreWithEntriesBeyondItsCounterAndAnEntryWithoutItsRecord() throws {
        let (dir, path) = try makeOldStore(
            upTo: "v8",
            migrator: Store.migrator(),
            sql: ChangeLogMigrationTests.rows + """
                DELETE FROM shareflow_meta WHERE key = 'logPending';
                UPDATE zone SET changeSeq = 1 WHERE id = 1;
                INSERT INTO zone_change (zoneID, name, type, seq, deleted, at, recordID) VALUES
                    (1, 'a', 'Note', 2, 0, 0, 1), (1, 'vanished', 'Note', 3, 0, 0, 99), (1, 'gone', 'Note', 9, 1, 0, NULL);
                """
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        try assertPositionsSound(store, "migrated")
        let engine = Engine(store: store)
        let alice = try engine.session(for: "alice@example.com").container("iCloud.t").privateCloudDatabase
        let zone = RecordZoneID(zoneName: "Z", ownerName: "_alice")
        let key = try store.read { try $0.changeTokenKey() }
        let early = ChangeToken(kind: .zone, environment: .development, scope: .private, target: 1, viewer: 1, seq: 2).encoded(key: key)
        let fromEarly = try alice.recordZoneChanges(zone, since: early)
        XCTAssertTrue(fromEarly.deletions.map(\.0.recordName).contains("vanished"), "a reader who was sent 'vanished' is told it is gone")
        let all = try alice.recordZoneChanges(zone)
        _ = try alice.modifyRecords(saving: [ShareFlow.Record(recordType: "Note", recordID: RecordID(recordName: "c", zoneID: zone))])
        XCTAssertEqual(
            try alice.recordZoneChanges(zone, since: all.changeToken).modifications.map(\.recordID.recordName),
            ["c"],
            "a save after the migration is past every migrated entry"
        )
        try assertPositionsSound(store, "after a save")
    }
}

/// A value handed to another thread by a test that knows it is used by one at a time.
private final class Unchecked<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
