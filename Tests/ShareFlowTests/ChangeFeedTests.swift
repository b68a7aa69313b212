import Crypto
import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §14: the zone and database feeds, natively (O9, O10's one-call forms).
class ChangeFeedTests: XCTestCase {
    private func note(_ name: String, in zone: RecordZoneID, parent: RecordID? = nil, title: String = "x") -> Record {
        Record(recordType: "Note", recordID: RecordID(recordName: name, zoneID: zone), fields: ["title": .string(title)], parent: parent)
    }

    private func save(_ records: [Record], in db: CloudDatabase) throws {
        let result = try db.modifyRecords(saving: records, savePolicy: .changedKeys)
        if let e = result.firstError { throw e }
    }

    // MARK: S2: the owner's zone feed

    func testTheOwnersZoneFeedGivesEachChangeOnceThenNothingWithTheSameToken() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        try save([note("a", in: w.zone.zoneID), note("b", in: w.zone.zoneID), note("c", in: w.zone.zoneID)], in: db)
        let first = try db.recordZoneChanges(w.zone.zoneID)
        XCTAssertEqual(first.modifications.map(\.recordID.recordName), ["a", "b", "c"])
        XCTAssertFalse(first.moreComing)
        let again = try db.recordZoneChanges(w.zone.zoneID, since: first.changeToken)
        XCTAssertTrue(again.modifications.isEmpty && again.deletions.isEmpty)
        XCTAssertEqual(again.changeToken, first.changeToken, "nothing new: the same token")

        // a changed twice appears once, after b's deletion... in the order of latest change.
        let a = try db.fetchRecord(RecordID(recordName: "a", zoneID: w.zone.zoneID))
        a["title"] = .string("one")
        try save([a], in: db)
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "b", zoneID: w.zone.zoneID)])
        let a2 = try db.fetchRecord(a.recordID)
        a2["title"] = .string("two")
        try save([a2], in: db)
        let delta = try db.recordZoneChanges(w.zone.zoneID, since: first.changeToken)
        XCTAssertEqual(delta.modifications.map(\.recordID.recordName), ["a"])
        XCTAssertEqual(delta.modifications.first?["title"], .string("two"))
        XCTAssertEqual(delta.deletions.map(\.recordID.recordName), ["b"])
        XCTAssertEqual(delta.deletions.first?.recordType, "Note")
    }

    func testPagesFollowResultsLimitAndDesiredKeys() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        try save((0..<7).map { note("n\($0)", in: w.zone.zoneID) }, in: db)
        var token: String?
        var seen: [String] = []
        var pages = 0
        repeat {
            let page = try db.recordZoneChanges(w.zone.zoneID, since: token, resultsLimit: 3, desiredKeys: [])
            XCTAssertLessThanOrEqual(page.modifications.count, 3)
            XCTAssertTrue(page.modifications.allSatisfy { $0.fields.isEmpty }, "desiredKeys [] gives no fields")
            seen += page.modifications.map(\.recordID.recordName)
            token = page.changeToken
            pages += 1
            if !page.moreComing { break }
        } while pages < 10
        XCTAssertEqual(seen, (0..<7).map { "n\($0)" })
        XCTAssertEqual(pages, 3)
    }

    // MARK: S1: tokens

    func testBadTokensAndPlacesAreClearErrors() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let other = try db.saveZone("Other")
        try save([note("a", in: w.zone.zoneID), note("o", in: other.zoneID)], in: db)
        let token = try db.recordZoneChanges(w.zone.zoneID).changeToken
        func code(_ body: () throws -> Void) -> ShareFlowError.Code? {
            do {
                try body()
                return nil
            } catch let e as ShareFlowError { return e.code } catch { return nil }
        }
        XCTAssertEqual(code { _ = try db.recordZoneChanges(other.zoneID, since: token) }, .invalidArguments, "another zone's token")
        var forged = Array(token)
        forged[10] = forged[10] == "A" ? "B" : "A"
        XCTAssertEqual(code { _ = try db.recordZoneChanges(w.zone.zoneID, since: String(forged)) }, .invalidArguments, "a forged token")
        XCTAssertEqual(code { _ = try db.recordZoneChanges(w.zone.zoneID, since: "nonsense") }, .invalidArguments)
        XCTAssertEqual(code { _ = try db.recordZoneChanges(w.zone.zoneID, since: "") }, .invalidArguments)
        XCTAssertEqual(code { _ = try db.databaseChanges(since: token) }, .invalidArguments, "a zone's token for the database feed")
        XCTAssertEqual(
            code { _ = try db.recordZoneChanges(RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)) },
            .invalidArguments,
            "the default zone has no feed"
        )
        XCTAssertEqual(
            code {
                _ = try w.c.publicCloudDatabase.recordZoneChanges(RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: "_defaultOwner"))
            },
            .badDatabase
        )
        XCTAssertEqual(code { _ = try w.c.publicCloudDatabase.databaseChanges() }, .badDatabase)
        for limit in [0, -1, Int.max, Int.min] {
            XCTAssertEqual(code { _ = try db.recordZoneChanges(w.zone.zoneID, resultsLimit: limit) }, .invalidArguments, "resultsLimit \(limit)")
            XCTAssertEqual(code { _ = try db.databaseChanges(resultsLimit: limit) }, .invalidArguments, "resultsLimit \(limit)")
        }
        // Another user's token, in their own zone of the same name.
        let bobZone = try w.bc.privateCloudDatabase.saveZone("Trips")
        XCTAssertEqual(
            code { _ = try w.bc.privateCloudDatabase.recordZoneChanges(bobZone.zoneID, since: token) },
            .invalidArguments,
            "another user's token"
        )
        // The other environment's.
        let production = try w.engine.session(for: w.alice).container(World.containerID, environment: .production).privateCloudDatabase
        let prodZone = try production.saveZone("Trips")
        XCTAssertEqual(code { _ = try production.recordZoneChanges(prodZone.zoneID, since: token) }, .invalidArguments, "another environment's token")
        // Deterministic: the same position gives the same string.
        XCTAssertEqual(try db.recordZoneChanges(w.zone.zoneID).changeToken, token)
        XCTAssertEqual(try db.currentChangeToken(w.zone.zoneID), token)
    }

    /// A token tells its holder nothing (SPEC §14 S1): it is sealed with the store's key, so a
    /// participant cannot read from it the zone's counter (which moves with the owner's
    /// changes outside the share) or row IDs; every token has one length; the same position
    /// still gives the same string; and a token given before (readable, HMAC only) keeps working.
    func testTokensAreOpaqueToTheirHolder() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        _ = try w.accept(share.url!, in: w.bc)
        let db = w.c.privateCloudDatabase
        let shared = w.bc.sharedCloudDatabase
        let before = try shared.recordZoneChanges(w.zone.zoneID)
        // The owner changes things outside the share: 31 records in another root.
        try save((0..<31).map { note("outside\($0)", in: w.zone.zoneID) }, in: db)
        let after = try shared.recordZoneChanges(w.zone.zoneID, since: before.changeToken)
        XCTAssertTrue(after.modifications.isEmpty)
        let tokens = [
            before.changeToken, after.changeToken, try db.recordZoneChanges(w.zone.zoneID).changeToken,
            try shared.databaseChanges().changeToken, try db.databaseChanges().changeToken,
        ]
        XCTAssertEqual(Set(tokens.map(\.count)).count, 1, "one length: \(tokens)")
        let key = try w.engine.store.read { try $0.changeTokenKey() }
        for token in tokens {
            let bytes = try XCTUnwrap(Base64URL.decode(token))
            XCTAssertEqual(bytes.first, ChangeToken.versionSealedWithZone, "sealed")
            let decoded = try ChangeToken.decode(token, key: key, kind: token == tokens[3] || token == tokens[4] ? .database : .zone)
            // Neither its position nor its rows appear in it as the readable token had them.
            for n in [decoded.seq, decoded.target, decoded.viewer] {
                var big = n.bigEndian
                XCTAssertNil(Data(bytes).range(of: Data(bytes: &big, count: 8)), "\(n) readable in \(token)")
            }
        }
        // The same position, the same string (nodes agree: §16).
        XCTAssertEqual(try shared.recordZoneChanges(w.zone.zoneID, since: before.changeToken).changeToken, after.changeToken)
        // A readable token of before wave 4 is honoured: the next page's token is sealed.
        let decoded = try ChangeToken.decode(after.changeToken, key: key, kind: .zone)
        var legacy: [UInt8] = [1, 1, decoded.environment == .production ? 1 : 0, decoded.scope == .shared ? 1 : 0]
        for n in [decoded.target, decoded.viewer, decoded.seq] { withUnsafeBytes(of: n.bigEndian) { legacy.append(contentsOf: $0) } }
        legacy += HMAC<SHA256>.authenticationCode(for: legacy, using: SymmetricKey(data: key)).prefix(16)
        let old = try shared.recordZoneChanges(w.zone.zoneID, since: Base64URL.encode(legacy))
        XCTAssertEqual(old.changeToken, after.changeToken)
        // An altered sealed token is refused, naming what it is.
        var altered = Array(try XCTUnwrap(Base64URL.decode(after.changeToken)))
        altered[20] ^= 1
        XCTAssertThrowsError(try shared.recordZoneChanges(w.zone.zoneID, since: Base64URL.encode(altered))) { error in
            XCTAssertTrue("\(error)".contains("not one ShareFlow gave"), "\(error)")
        }
    }

    func testAPrunedLogExpiresOlderTokens() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        try save([note("a", in: w.zone.zoneID), note("b", in: w.zone.zoneID)], in: db)
        let start = try db.recordZoneChanges(w.zone.zoneID).changeToken
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "a", zoneID: w.zone.zoneID)])
        let removed = try w.engine.store.write { try $0.pruneChangeLog(before: Date().timeIntervalSince1970 + 1) }
        XCTAssertGreaterThan(removed, 0)
        XCTAssertThrowsError(try db.recordZoneChanges(w.zone.zoneID, since: start)) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .changeTokenExpired)
        }
        // From the start again: what is there.
        XCTAssertEqual(try db.recordZoneChanges(w.zone.zoneID).modifications.map(\.recordID.recordName), ["b"])
    }

    /// A first sync after the log was pruned: its pages' tokens are good (a page ending
    /// below the pruned part used to be `changeTokenExpired`, so a feed longer than a page
    /// could never be fetched from the start again), and its last token too (a pruned
    /// tombstone was the feed's last entry: the token after the live ones was expired at once).
    /// A token of a fetch started before a later pruning still expires.
    func testAFirstSyncAfterPruningPagesThroughToAGoodToken() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        try save(["a", "b", "c", "d"].map { note($0, in: w.zone.zoneID) }, in: db)
        let extra = try ["Z1", "Z2", "Z3"].map { try db.saveZone($0) }
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "d", zoneID: w.zone.zoneID)])
        try db.deleteZone(extra[2].zoneID)
        XCTAssertGreaterThan(try w.engine.store.write { try $0.pruneChangeLog(before: Date().timeIntervalSince1970 + 1) }, 0)

        var names: [String] = []
        var token: String? = nil
        var stale: String? = nil
        repeat {
            let page = try db.recordZoneChanges(w.zone.zoneID, since: token, resultsLimit: 1)
            names += page.modifications.map(\.recordID.recordName)
            token = page.changeToken
            if page.moreComing && stale == nil { stale = page.changeToken }
            if !page.moreComing { break }
        } while true
        XCTAssertEqual(names, ["a", "b", "c"])
        let last = try db.recordZoneChanges(w.zone.zoneID, since: token)
        XCTAssertTrue(last.modifications.isEmpty && last.deletions.isEmpty)
        XCTAssertEqual(last.changeToken, token, "nothing new: the same token")
        XCTAssertEqual(try db.currentChangeToken(w.zone.zoneID), token)

        var zones: [String] = []
        var dbToken: String? = nil
        repeat {
            let page = try db.databaseChanges(since: dbToken, resultsLimit: 1)
            zones += page.changedZoneIDs.map(\.zoneName)
            dbToken = page.changeToken
            if !page.moreComing { break }
        } while true
        XCTAssertTrue(zones.contains("Z1") && zones.contains("Z2") && !zones.contains("Z3"), "\(zones)")
        XCTAssertTrue(try db.databaseChanges(since: dbToken).changedZoneIDs.isEmpty)

        // Pruned again past a mid-fetch token's position: it may have missed a tombstone.
        _ = try db.modifyRecords(deleting: [RecordID(recordName: "c", zoneID: w.zone.zoneID)])
        _ = try w.engine.store.write { try $0.pruneChangeLog(before: Date().timeIntervalSince1970 + 1) }
        XCTAssertThrowsError(try db.recordZoneChanges(w.zone.zoneID, since: stale)) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .changeTokenExpired)
        }
    }

    /// The database feed's current token is where a fetch from the start ends: before any
    /// feed, after changes (pages of one), after a zone deleted and its tombstone pruned; and
    /// reading from it gives only what comes after.
    func testTheCurrentDatabaseTokenIsWhereAFetchFromTheStartEnds() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let shared = w.bc.sharedCloudDatabase
        func fullFetch(_ database: CloudDatabase) throws -> String {
            var token: String?
            while true {
                let page = try database.databaseChanges(since: token, resultsLimit: 1)
                token = page.changeToken
                if !page.moreComing { return page.changeToken }
            }
        }
        XCTAssertEqual(try shared.currentDatabaseChangeToken(), try fullFetch(shared), "no feed yet")
        for name in ["Z1", "Z2", "Z3"] { _ = try db.saveZone(name) }
        XCTAssertEqual(try db.currentDatabaseChangeToken(), try fullFetch(db))
        try db.deleteZone(RecordZoneID(zoneName: "Z3", ownerName: RecordZoneID.currentUserName))
        _ = try w.engine.store.write { try $0.pruneChangeLog(before: Date().timeIntervalSince1970 + 1) }
        let current = try db.currentDatabaseChangeToken()
        XCTAssertEqual(current, try fullFetch(db), "the pruned tombstone was the feed's last entry")
        XCTAssertTrue(try db.databaseChanges(since: current).changedZoneIDs.isEmpty)
        _ = try db.saveZone("Z4")
        XCTAssertEqual(try db.databaseChanges(since: current).changedZoneIDs.map(\.zoneName), ["Z4"])
        XCTAssertThrowsError(try w.c.publicCloudDatabase.currentDatabaseChangeToken())
    }

    // MARK: S4: a zone changed again while it is its feed's last entry

    /// A write leaves a database feed's last entry in place when its zone changes again
    /// (`StoreTransaction.write(_:)` of a feed move); the token keeps where that zone stood,
    /// so the feed still reports the zone after every change of it, and only then: under a
    /// random interleaving of saves and deletes in two zones (one shared under a root, one
    /// shared whole) and reads in pages of 1 to 3 by the owner and two participants, each
    /// read reports exactly the zones whose own feed moved for the reader since its last
    /// read, and asking again with its token gives nothing and the same token.
    func testTheDatabaseFeedReportsExactlyTheZonesThatChangedForItsReader() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let share = try w.share(["bob@example.com"])
        _ = try w.accept(share.url!, in: w.bc)
        let other = try db.saveZone("Other")
        let whole = Share(zoneID: other.zoneID)
        whole.addParticipant(try w.participant("carol@example.com"))
        if let e = try db.modifyRecords(saving: [whole]).error { throw e }
        _ = try w.accept(whole.url!, in: w.cc)
        let zones = [w.zone.zoneID, other.zoneID]
        struct Reader {
            let name: String
            let db: CloudDatabase
            let zones: [RecordZoneID]
            var token: String?
            var seen: [RecordZoneID: String] = [:]
        }
        var readers = [
            Reader(name: "alice", db: db, zones: zones),
            Reader(name: "bob", db: w.bc.sharedCloudDatabase, zones: [w.zone.zoneID]),
            Reader(name: "carol", db: w.cc.sharedCloudDatabase, zones: [other.zoneID]),
        ]
        /// Where each zone's feed stands for the reader (its current token: one string a position).
        func positions(_ r: Reader) throws -> [RecordZoneID: String] {
            Dictionary(uniqueKeysWithValues: try r.zones.map { ($0, try r.db.currentChangeToken($0)) })
        }
        for i in readers.indices {
            let first = try readers[i].db.databaseChanges()
            readers[i].token = first.changeToken
            readers[i].seen = try positions(readers[i])
        }
        var state: UInt64 = 0x5EED_F00D
        func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        var names: [RecordZoneID: [String]] = [w.zone.zoneID: [], other.zoneID: []]
        for step in 0..<240 {
            switch next(6) {
            case 0, 1, 2:
                // A save: in Trips under the shared trip (Bob sees it) or outside it (he does not).
                let zone = zones[next(2)]
                let name = "n\(step)"
                let parent = zone == w.zone.zoneID && next(2) == 0 ? w.trip.recordID : nil
                try save([note(name, in: zone, parent: parent)], in: db)
                names[zone]!.append(name)
            case 3:
                let zone = zones[next(2)]
                guard !names[zone]!.isEmpty else { continue }
                let name = names[zone]!.remove(at: next(names[zone]!.count))
                if let e = try db.modifyRecords(deleting: [RecordID(recordName: name, zoneID: zone)]).error { throw e }
            default:
                let i = next(readers.count)
                var reported: Set<RecordZoneID> = []
                var pages = 0
                repeat {
                    let page = try readers[i].db.databaseChanges(since: readers[i].token, resultsLimit: 1 + next(3))
                    reported.formUnion(page.changedZoneIDs)
                    XCTAssertTrue(page.deletions.isEmpty, "step \(step): no zone went")
                    readers[i].token = page.changeToken
                    pages += 1
                    if !page.moreComing { break }
                } while pages < 10
                let now = try positions(readers[i])
                let moved = Set(readers[i].zones.filter { now[$0] != readers[i].seen[$0] })
                XCTAssertEqual(reported, moved, "step \(step), \(readers[i].name): the zones reported are those whose feed moved")
                readers[i].seen = now
                let again = try readers[i].db.databaseChanges(since: readers[i].token)
                XCTAssertTrue(again.changedZoneIDs.isEmpty && again.deletions.isEmpty, "step \(step), \(readers[i].name): nothing new")
                XCTAssertEqual(again.changeToken, readers[i].token, "step \(step), \(readers[i].name): the same token")
                XCTAssertEqual(try readers[i].db.currentDatabaseChangeToken(), readers[i].token, "step \(step): the current token")
            }
        }
    }

    // MARK: S3, S4: a participant's feeds

    func testAParticipantSeesTheSharedZoneComeAndGoWithItsRecords() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let share = try w.share(["bob@example.com"])
        try save([note("private", in: w.zone.zoneID)], in: db)
        let shared = w.bc.sharedCloudDatabase
        XCTAssertTrue(try shared.databaseChanges().changedZoneIDs.isEmpty, "a pending invitation opens no zone (R37)")

        try w.accept(share.url!, in: w.bc)
        let dbFeed = try shared.databaseChanges()
        XCTAssertEqual(dbFeed.changedZoneIDs, [w.zone.zoneID])
        let zoneFeed = try shared.recordZoneChanges(w.zone.zoneID)
        XCTAssertEqual(
            Set(zoneFeed.modifications.map(\.recordID.recordName)),
            ["lisbon", "day1", share.recordID.recordName],
            "the shared hierarchy and its share, never the owner's other records"
        )

        // A record moved into the hierarchy comes into view; moved out, it leaves as a tombstone.
        let mine = try db.fetchRecord(RecordID(recordName: "private", zoneID: w.zone.zoneID))
        mine.parent = w.trip.recordID
        try save([mine], in: db)
        let moved = try shared.recordZoneChanges(w.zone.zoneID, since: zoneFeed.changeToken)
        XCTAssertEqual(moved.modifications.map(\.recordID.recordName), ["private"])
        let back = try db.fetchRecord(mine.recordID)
        back.parent = nil
        try save([back], in: db)
        let out = try shared.recordZoneChanges(w.zone.zoneID, since: moved.changeToken)
        XCTAssertEqual(out.modifications.map(\.recordID.recordName), [])
        XCTAssertEqual(out.deletions.map(\.recordID.recordName), ["private"])

        // Removed: everything seen leaves; the zone leaves the database feed.
        let current = try db.fetchRecord(share.recordID) as! Share
        current.removeParticipant(current.participants.first { $0.userIdentity.userRecordID == w.bob.userRecordID }!)
        try save([current], in: db)
        let gone = try shared.databaseChanges(since: dbFeed.changeToken)
        XCTAssertEqual(gone.deletions.map(\.zoneID), [w.zone.zoneID])
        XCTAssertEqual(gone.deletions.first?.reason, "deleted")
        XCTAssertThrowsError(try shared.recordZoneChanges(w.zone.zoneID, since: out.changeToken)) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .zoneNotFound, "the zone is no longer in Bob's shared database")
        }
    }

    func testTheOwnersDatabaseFeedReportsZonesMadeChangedAndDeleted() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let start = try db.databaseChanges()
        XCTAssertEqual(start.changedZoneIDs, [w.zone.zoneID])
        let again = try db.databaseChanges(since: start.changeToken)
        XCTAssertTrue(again.changedZoneIDs.isEmpty)
        XCTAssertEqual(again.changeToken, start.changeToken)
        let other = try db.saveZone("Other")
        try save([note("a", in: w.zone.zoneID)], in: db)
        XCTAssertEqual(try db.databaseChanges(since: start.changeToken).changedZoneIDs, [other.zoneID, w.zone.zoneID])
        try db.deleteZone(other.zoneID)
        let after = try db.databaseChanges(since: start.changeToken)
        XCTAssertEqual(after.changedZoneIDs, [w.zone.zoneID])
        XCTAssertEqual(after.deletions.map(\.zoneID), [other.zoneID])
    }
}
