import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// Records from a feed page (fields decoded when first read) edit, conflict and save as fetched ones.
class FeedRecordEditTests: XCTestCase {
    private func feedRecord(_ db: CloudDatabase, _ zone: RecordZoneID, _ name: String, keys: [String]? = nil) throws -> Record {
        try XCTUnwrap(try db.recordZoneChanges(zone, desiredKeys: keys).modifications.first { $0.recordID.recordName == name })
    }

    func testFeedRecordsBehaveAsFetchedOnes() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = w.zone.zoneID
        let r = Record(
            recordType: "Note",
            recordID: RecordID(recordName: "n", zoneID: zone),
            fields: ["a": .string("A"), "b": .integer(1), "c": .double(-0.0), "d": .date(Date(timeIntervalSince1970: 5))]
        )
        XCTAssertNil(try db.modifyRecords(saving: [r]).firstError)

        // mutate before any read
        let f1 = try feedRecord(db, zone, "n")
        let g1 = try db.fetchRecord(r.recordID)
        f1["a"] = .string("X")
        g1["a"] = .string("X")
        XCTAssertEqual(f1.changedKeys(), g1.changedKeys())
        XCTAssertEqual(f1.changedKeys(), ["a"])
        XCTAssertEqual(f1.fields, g1.fields)
        XCTAssertEqual(f1.ancestor()?.fields, g1.ancestor()?.fields)
        XCTAssertEqual(f1.duplicate().changedKeys(), ["a"])
        XCTAssertEqual(f1.copy(keys: ["b"]).fields, ["b": .integer(1)])

        // remove via subscript first
        let f2 = try feedRecord(db, zone, "n")
        f2["b"] = nil
        XCTAssertEqual(f2.changedKeys(), ["b"])
        XCTAssertEqual(f2.fields.count, 3)

        // whole assignment first
        let f3 = try feedRecord(db, zone, "n")
        f3.fields = ["z": .boolean(true)]
        XCTAssertEqual(f3.changedKeys(), ["a", "b", "c", "d", "z"])
        XCTAssertNotNil(f3.ancestor())
        XCTAssertEqual(f3.ancestor()?.fields.count, 4)

        // save a feed record untouched, then with changedKeys
        let f4 = try feedRecord(db, zone, "n")
        XCTAssertNil(try db.modifyRecords(saving: [f4], savePolicy: .changedKeys).firstError)
        XCTAssertEqual(try db.fetchRecord(r.recordID).fields.count, 4)
        let f5 = try feedRecord(db, zone, "n")
        f5["e"] = .string("E")
        XCTAssertNil(try db.modifyRecords(saving: [f5], savePolicy: .changedKeys).firstError)
        XCTAssertEqual(try db.fetchRecord(r.recordID).fields.count, 5)
        XCTAssertEqual(f5.changedKeys(), [], "adopted the server's state")
        XCTAssertEqual(f5.fields.count, 5)

        // a stale feed record conflicting: ancestor has the server copy it was given
        let stale = try feedRecord(db, zone, "n")
        let fresh = try db.fetchRecord(r.recordID)
        fresh["a"] = .string("server")
        XCTAssertNil(try db.modifyRecords(saving: [fresh]).firstError)
        stale["a"] = .string("client")
        let result = try db.modifyRecords(saving: [stale])
        let e = try XCTUnwrap(result.firstError)
        XCTAssertEqual(e.code, .serverRecordChanged)
        XCTAssertEqual(e.ancestorRecord?["a"], .string("A"))
        XCTAssertEqual(e.clientRecord?["a"], .string("client"))
        XCTAssertEqual(e.serverRecord?["a"], .string("server"))

        // desired keys
        let k = try feedRecord(db, zone, "n", keys: ["a", "nope"])
        XCTAssertEqual(Array(k.fields.keys), ["a"])
        XCTAssertEqual(k.changedKeys(), [])
        let none = try feedRecord(db, zone, "n", keys: [])
        XCTAssertEqual(none.fields, [:])
        XCTAssertEqual(none.changedKeys(), [])
    }

    func testZoneShareFromTheFeed() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = try db.saveZone("Z").zoneID
        let share = Share(zoneID: zone)
        share.title = "T"
        share.addParticipant(try w.participant("bob@example.com"))
        let items = (0..<3).map {
            Record(recordType: "Item", recordID: RecordID(recordName: "i\($0)", zoneID: zone), fields: ["n": .integer(Int64($0))])
        }
        XCTAssertNil(try db.modifyRecords(saving: items + [share]).firstError)
        _ = try w.accept(share.url!, in: w.bc)
        let page = try w.bc.sharedCloudDatabase.recordZoneChanges(zone)
        let s = try XCTUnwrap(page.modifications.compactMap { $0 as? Share }.first)
        XCTAssertEqual(s.title, "T")
        XCTAssertEqual(page.modifications.count, 4)
        for m in page.modifications where !(m is Share) {
            XCTAssertEqual(m.fields, try db.fetchRecord(m.recordID).fields)
            XCTAssertEqual(m.creatorUserRecordID?.recordName, w.alice.userRecordID)
        }
    }
}
