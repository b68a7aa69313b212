import Foundation
import XCTest
@testable import ShareFlow

/// R34: deleting a record whose children remain is allowed (CloudKit does not cascade
/// `parent`); the children keep their parent's name, saving one again under it is
/// `referenceViolation` (R25 holds for every save), and `store check` notes them, healthy.
final class OrphanTests: XCTestCase {
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
}
