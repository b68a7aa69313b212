import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R34: deleting a record whose children remain is allowed (CloudKit does not cascade
/// `parent`); the children keep their parent's name, saving one again under it is
/// `referenceViolation` (R25 holds for every save), and `store check` notes them, healthy.
class OrphanTests: XCTestCase {
    func testAChildOutlivesItsParentAndCannotBeSavedUnderIt() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        XCTAssertNil(try db.modifyRecords(saving: [w.trip, w.day]).error)
        XCTAssertNil(try db.modifyRecords(deleting: [w.trip.recordID]).error)
        let day = try db.fetchRecord(w.day.recordID)
        XCTAssertEqual(day.parent?.recordName, "lisbon", "the child keeps its parent's name")
        let check = try w.engine.store.check()
        XCTAssertTrue(check.isHealthy, "\(check.problems)")
        XCTAssertEqual(check.notes, ["record day1: its parent lisbon was deleted; the record stays without it (R34)"])
        day["note"] = .string("edited")
        XCTAssertEqual(try db.modifyRecords(saving: [day]).firstError?.code, .referenceViolation)
        day.parent = nil
        XCTAssertNil(try db.modifyRecords(saving: [day]).firstError)
        XCTAssertEqual(try w.engine.store.check().notes, [])
    }

    /// A record made again under the name its orphans still name sits above them: putting it
    /// under one of them would close a cycle, and R25 refuses that however the chain was made.
    func testARecordMadeAgainAboveItsOrphansCannotGoUnderThem() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let leaf = Record(recordType: "Stop", recordID: RecordID(recordName: "stop1", zoneID: w.zone.zoneID), parent: w.day.recordID)
        XCTAssertNil(try db.modifyRecords(saving: [w.trip, w.day, leaf]).error)
        XCTAssertNil(try db.modifyRecords(deleting: [w.trip.recordID]).error)
        // day1 still names lisbon; a new lisbon under stop1 (day1's child) would be its own ancestor.
        let again = Record(recordType: "Trip", recordID: w.trip.recordID, parent: leaf.recordID)
        let error = try db.modifyRecords(saving: [again]).firstError
        XCTAssertEqual(error?.code, .referenceViolation)
        XCTAssertTrue(error?.message.contains("descends from it") == true, "\(String(describing: error))")
        // Without the parent it is fine, and the orphans are children again.
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: w.trip.recordID)]).error)
        XCTAssertEqual(try w.engine.store.check().notes, [])
    }

    /// Deep chains: saves and a participant's reach cost walks in SQL, and stay right at depth
    /// 600 — a record at the bottom is in the share at the top; a cycle is still found there.
    func testDeepChainsKeepCoverageAndCycleChecks() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        var chain = [w.trip]
        for i in 1..<600 {
            chain.append(Record(recordType: "Node", recordID: RecordID(recordName: "n\(i)", zoneID: w.zone.zoneID), parent: chain[i - 1].recordID))
        }
        let share = Share(rootRecord: w.trip)
        share.addParticipant(try w.participant("bob@example.com", permission: .readWrite))
        for start in stride(from: 0, to: chain.count, by: 200) {
            let batch = Array(chain[start..<min(start + 200, chain.count)]) + (start == 0 ? [share] : [])
            XCTAssertNil(try db.modifyRecords(saving: batch).error)
        }
        try w.accept(share.url!, in: w.bc)
        let leaf = Record(recordType: "Node", recordID: RecordID(recordName: "leaf", zoneID: w.zone.zoneID), parent: chain.last!.recordID)
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [leaf]).error, "the bottom is in the share at the top")
        XCTAssertNotNil(try w.bc.sharedCloudDatabase.fetchRecord(leaf.recordID))
        let top = try db.fetchRecord(chain[1].recordID)
        top.parent = leaf.recordID
        XCTAssertEqual(try db.modifyRecords(saving: [top]).firstError?.code, .referenceViolation, "n1 under its own descendant")
    }
}
