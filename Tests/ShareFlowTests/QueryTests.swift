import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// O7 (queries) and O8 (audits); the Lua side is Tests/lua/query_test.lua.
class QueryTests: XCTestCase {
    private func trips(_ w: World, _ n: Int = 7) throws -> [Record] {
        let records = (1...n).map { i in
            Record(
                recordType: "Trip",
                recordID: RecordID(recordName: "t\(i)", zoneID: w.zone.zoneID),
                fields: ["days": .integer(Int64(i)), "title": .string(i % 2 == 0 ? "Lisbon \(i)" : "Porto \(i)")]
            )
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: records).error)
        return records
    }

    func testO7PredicateSortLimitAndCursor() throws {
        let w = try World()
        _ = try trips(w)
        let q = try Query(
            recordType: "Trip",
            predicate: "days >= %@ AND title BEGINSWITH %@",
            arguments: [.integer(2), .string("Lis")],
            sortDescriptors: [SortDescriptor(key: "days", ascending: false)]
        )
        let db = w.c.privateCloudDatabase
        let first = try db.records(matching: q, inZoneWith: w.zone.zoneID, resultsLimit: 2)
        XCTAssertEqual(first.records.map(\.recordID.recordName), ["t6", "t4"])
        let cursor = try XCTUnwrap(first.cursor)
        let rest = try db.records(continuingMatchFrom: cursor)
        XCTAssertEqual(rest.records.map(\.recordID.recordName), ["t2"])
        XCTAssertNil(rest.cursor)
        let picked = try db.records(
            matching: Query(recordType: "Trip", predicate: "recordName IN {'t1', 't3'} AND days != 3"),
            inZoneWith: w.zone.zoneID
        )
        XCTAssertEqual(picked.records.map(\.recordID.recordName), ["t1"])
        let keys = try db.records(
            matching: Query(recordType: "Trip", predicate: "days == 5"),
            inZoneWith: w.zone.zoneID,
            desiredKeys: ["days"]
        )
        XCTAssertEqual(keys.records.first?.fields, ["days": .integer(5)])
    }

    /// Point 11 of wave 3: NSPredicate's `=>` and `=<`, `ANY list == value` and `list CONTAINS
    /// value` on list fields; a form the parser does not know is invalidArguments, never a
    /// silent empty result.
    func testListMembershipAndTheOtherSpellings() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let records = [("a", ["beach", "food"]), ("b", ["food"]), ("c", ["hike"])].enumerated().map { i, r in
            Record(
                recordType: "Trip",
                recordID: RecordID(recordName: r.0, zoneID: w.zone.zoneID),
                fields: ["tags": .list(r.1.map { .string($0) }), "days": .integer(Int64(i + 1))]
            )
        }
        XCTAssertNil(try db.modifyRecords(saving: records).error)
        func names(_ format: String, _ arguments: [FieldValue] = []) throws -> [String] {
            try db.records(
                matching: Query(
                    recordType: "Trip",
                    predicate: format,
                    arguments: arguments,
                    sortDescriptors: [SortDescriptor(key: "recordName")]
                ),
                inZoneWith: w.zone.zoneID
            )
            .records.map(\.recordID.recordName)
        }
        XCTAssertEqual(try names("ANY tags == 'food'"), ["a", "b"])
        XCTAssertEqual(try names("tags CONTAINS %@", [.string("hike")]), ["c"])
        XCTAssertEqual(try names("ANY tags == 'none'"), [])
        XCTAssertEqual(try names("days => 2"), ["b", "c"])
        XCTAssertEqual(try names("days =< 2"), ["a", "b"])
    }

    /// NOT before any clause, and CloudKit's distance form (`distanceToLocation:fromLocation:`),
    /// with a sort by distance: what NOT_IN, NEAR and `relativeLocation` are over HTTP.
    func testNotAndDistanceInTheFormatAndASortByDistance() throws {
        let w = try World()
        let places = [("lisbon", 38.72, -9.14), ("porto", 41.15, -8.61), ("oslo", 59.91, 10.75)].map { name, lat, lon in
            Record(
                recordType: "Place",
                recordID: RecordID(recordName: name, zoneID: w.zone.zoneID),
                fields: ["at": .location(Location(latitude: lat, longitude: lon))]
            )
        }
        let db = w.c.privateCloudDatabase
        XCTAssertNil(try db.modifyRecords(saving: places).error)
        func names(_ format: String, _ arguments: [FieldValue], sort: [ShareFlow.SortDescriptor] = []) throws -> [String] {
            let q = try Query(recordType: "Place", predicate: format, arguments: arguments, sortDescriptors: sort)
            return try db.records(matching: q, inZoneWith: w.zone.zoneID).records.map(\.recordID.recordName)
        }
        let lisbon = FieldValue.location(Location(latitude: 38.7, longitude: -9.1))
        XCTAssertEqual(try names("distanceToLocation:fromLocation:(at, %@) < 400000", [lisbon]), ["lisbon", "porto"])
        XCTAssertEqual(try names("NOT distanceToLocation:fromLocation:(at, %@) < 400000", [lisbon]), ["oslo"])
        XCTAssertEqual(try names("NOT (recordName IN {'oslo', 'porto'})", []), ["lisbon"])
        XCTAssertEqual(
            try names("TRUEPREDICATE", [], sort: [ShareFlow.SortDescriptor(key: "at", relativeTo: Location(latitude: 60, longitude: 10))]),
            ["oslo", "porto", "lisbon"]
        )
        XCTAssertThrowsError(try names("distanceToLocation:fromLocation:(at, %@) > 5", [lisbon])) { error in
            XCTAssertTrue("\(error)".contains("compared with < or <="), "\(error)")
        }
        XCTAssertEqual(Location.distance(Location(latitude: 0, longitude: 0), Location(latitude: 0, longitude: 1)), 111_195, accuracy: 1)
    }

    func testAFormTheParserDoesNotKnowIsInvalidArguments() throws {
        let w = try World()
        for format in ["days LIKE 'x'", "ANY tags", "tags CONTAINS", "days => ", "days =! 3", "ANY tags BEGINSWITH 'f'", "days == 1 OR days == 2"] {
            XCTAssertThrowsError(try Query(recordType: "Trip", predicate: format), format) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .invalidArguments, "\(format): \(error)")
            }
        }
        _ = w
    }

    func testO7ThroughTheOperationWithBothBlockNames() throws {
        let w = try World()
        _ = try trips(w, 3)
        let op = QueryOperation(query: Query(recordType: "Trip", sortDescriptors: [SortDescriptor(key: "recordName")]))
        op.zoneID = w.zone.zoneID
        op.resultsLimit = 2
        var matched: [String] = []
        var fetched: [String] = []
        var cursor: QueryCursor?
        var completions = 0
        op.recordMatchedBlock = { id, _ in matched.append(id.recordName) }
        op.recordFetchedBlock = { fetched.append($0.recordID.recordName) }
        op.queryResultBlock = { if case .success(let c) = $0 { cursor = c } }
        op.queryCompletionBlock = { _, _ in completions += 1 }
        w.c.add(op)
        op.waitUntilFinished()
        XCTAssertEqual(matched, ["t1", "t2"])
        XCTAssertEqual(fetched, matched)
        XCTAssertEqual(completions, 1)
        let next = QueryOperation(cursor: try XCTUnwrap(cursor))
        var more: [String] = []
        next.recordMatchedBlock = { id, _ in more.append(id.recordName) }
        w.c.add(next)
        next.waitUntilFinished()
        XCTAssertEqual(more, ["t3"])
        let bad = QueryOperation()
        w.c.add(bad)
        bad.waitUntilFinished()
        XCTAssertEqual(bad.error?.code, .invalidArguments)
    }

    func testO7BadPredicatesAndNamesAreInvalidArguments() throws {
        for bad in ["days >>= 3", "days ==", "days == %@", "(days == 1", "days LIKE 'x'", "1days == 2", "days == 1 OR days == 2"] {
            XCTAssertThrowsError(try Predicate(format: bad), bad) { e in
                XCTAssertEqual((e as? ShareFlowError)?.code, .invalidArguments, bad)
                XCTAssertTrue((e as? ShareFlowError)?.message.contains("O7") ?? false)
            }
        }
        let w = try World()
        XCTAssertThrowsError(try w.c.privateCloudDatabase.records(matching: Query(recordType: "Not a type")))
        XCTAssertThrowsError(try w.c.sharedCloudDatabase.records(matching: Query(recordType: "Trip")), "the shared database needs a zone")
    }

    /// R12 in queries: the shared database shows only what the caller has accepted.
    func testO7HonoursR12InTheSharedDatabase() throws {
        let w = try World()
        let all = try trips(w, 3)
        let share = Share(rootRecord: all[1])
        share.addParticipant(try w.participant("bob@example.com"))
        let child = Record(recordType: "Trip", recordID: RecordID(recordName: "child", zoneID: w.zone.zoneID), parent: all[1].recordID)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [all[1], child, share]).error)
        let shared = w.bc.sharedCloudDatabase
        // R37: until Bob accepts, his shared database is a stranger's: the zone is not found.
        XCTAssertThrowsError(try shared.records(matching: Query(recordType: "Trip"), inZoneWith: w.zone.zoneID), "pending") { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .zoneNotFound)
        }
        try w.accept(share.url!, in: w.bc)
        let seen = try shared.records(
            matching: Query(recordType: "Trip", sortDescriptors: [SortDescriptor(key: "recordName")]),
            inZoneWith: w.zone.zoneID
        )
        XCTAssertEqual(seen.records.map(\.recordID.recordName), ["child", "t2"])
        XCTAssertThrowsError(try w.cc.sharedCloudDatabase.records(matching: Query(recordType: "Trip"), inZoneWith: w.zone.zoneID)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .zoneNotFound, "a stranger (R27)")
        }
    }

    func testO8AuditListsEveryShareWithEveryParticipant() throws {
        let w = try World()
        let s = try w.share(["bob@example.com", "nobody@example.com"], permission: .readWrite)
        try w.accept(s.url!, in: w.bc)
        let other = try w.engine.session(for: w.carol).container("iCloud.other")
        let zone = try other.privateCloudDatabase.saveZone("Z")
        let note = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: zone.zoneID))
        XCTAssertNil(try other.privateCloudDatabase.modifyRecords(saving: [note, Share(rootRecord: note)]).error)

        XCTAssertEqual(try w.engine.auditShares().count, 2)
        let audit = try XCTUnwrap(w.engine.auditShares(container: World.containerID).first)
        XCTAssertEqual(try w.engine.auditShares(container: World.containerID).count, 1)
        XCTAssertEqual(audit.url, s.url)
        XCTAssertEqual(audit.title, "Lisbon trip")
        XCTAssertEqual(audit.ownerUserRecordID, w.alice.userRecordID)
        XCTAssertEqual(audit.rootRecordID, w.trip.recordID)
        XCTAssertEqual(audit.participants.map(\.acceptanceStatus), [.accepted, .accepted, .pending])
        XCTAssertNil(audit.participants[2].userRecordID, "no account for nobody@example.com")
        XCTAssertEqual(try w.engine.auditShares(participant: "nobody@example.com").count, 1, "by the address invited")
        XCTAssertEqual(try w.engine.auditShares(owner: "carol@example.com").count, 1)
        XCTAssertEqual(try w.engine.auditShares(owner: "bob@example.com").count, 0)
        XCTAssertEqual(try w.engine.auditShares(owner: "nobody@example.com").count, 0)
        // Removed participants stay in the audit.
        let fresh = try XCTUnwrap(w.c.privateCloudDatabase.fetchRecord(s.recordID) as? Share)
        fresh.removeParticipant(try XCTUnwrap(fresh.participants.first { $0.role == .privateUser && $0.acceptanceStatus == .accepted }))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fresh]).error)
        XCTAssertTrue(
            try w.engine.auditShares(participant: "bob@example.com").first?.participants.contains { $0.acceptanceStatus == .removed } ?? false
        )
    }
}

/// `IN` is hashed (a query costs records + values, never their product) with exactly the
/// equality of `FieldValue.order`: checked against the linear search over many values.
class MatchSetTests: XCTestCase {
    func testTheHashedSetAgreesWithTheOrderEverywhere() {
        let zone = RecordZoneID(zoneName: "Z", ownerName: "_o")
        let pool: [FieldValue] = [
            .integer(0), .integer(1), .integer(-1), .integer(Int64.max), .integer(Int64.max - 1), .integer(1 << 53), .integer((1 << 53) + 1),
            .double(0), .double(-0.0), .double(1), .double(1.5), .double(.nan), .double(.infinity), .double(9_007_199_254_740_992),
            .string("a"), .string("é"), .string("e\u{301}"), .string(""), .boolean(true), .boolean(false),
            .date(Date(timeIntervalSince1970: 0)), .date(Date(timeIntervalSince1970: 1.5)),
            .reference(RecordID(recordName: "r", zoneID: zone), action: .none),
            .reference(RecordID(recordName: "r", zoneID: zone), action: .deleteSelf),
            .reference(RecordID(recordName: "r", zoneID: .default), action: .none),
            .bytes(Data([1, 2])), .list([.integer(1)]), .location(Location(latitude: 1, longitude: 2)),
        ]
        var random = SeededRandom(seed: 7)
        func next(_ n: Int) -> Int { random.next(n) }
        for _ in 0..<400 {
            let values = (0..<next(6)).map { _ in pool[next(pool.count)] }
            let set = MatchSet(values)
            for v in pool {
                let linear = values.contains { FieldValue.order($0, v) == .orderedSame }
                XCTAssertEqual(set.contains(v), linear, "\(v) IN \(values)")
            }
        }
    }

    /// References compare in one order whichever way round (zone, then name), as a sort by a
    /// reference field pages by it (R33): two references in different zones are not each
    /// before the other.
    func testReferencesCompareInOneOrder() {
        let zones = [
            RecordZoneID(zoneName: "A", ownerName: "o1"), RecordZoneID(zoneName: "B", ownerName: "o1"), RecordZoneID(zoneName: "A", ownerName: "o2"),
        ]
        let references = zones.flatMap { zone in ["r", "s"].map { FieldValue.reference(RecordID(recordName: $0, zoneID: zone), action: .none) } }
        for a in references {
            for b in references {
                let ab = FieldValue.order(a, b)
                let ba = FieldValue.order(b, a)
                XCTAssertEqual(ab == .orderedSame, a == b, "\(a) against \(b)")
                if ab == .orderedAscending { XCTAssertEqual(ba, .orderedDescending, "\(a) before \(b), so \(b) after \(a)") }
                for c in references where ab == .orderedAscending && FieldValue.order(b, c) == .orderedAscending {
                    XCTAssertEqual(FieldValue.order(a, c), .orderedAscending, "transitive: \(a) < \(b) < \(c)")
                }
            }
        }
    }
}
