import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R25: a parent must exist in the same zone (or be saved earlier in the call), and a parent
/// chain never loops. A finding of issue 13 that failed on main before it; the Lua side is
/// Tests/lua/records_test.lua.
class ParentTests: XCTestCase {
    func testR25ParentsMustExistAndNeverCycle() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let orphan = Record(
            recordType: "Day",
            recordID: RecordID(recordName: "orphan", zoneID: w.zone.zoneID),
            parent: RecordID(recordName: "nowhere", zoneID: w.zone.zoneID)
        )
        var error = try XCTUnwrap(try db.modifyRecords(saving: [orphan]).firstError)
        XCTAssertEqual(error.code, .referenceViolation)
        XCTAssertEqual(error.codeNumber, 31)
        // A child listed before its parent in one call is fine.
        XCTAssertNil(try db.modifyRecords(saving: [w.day, w.trip]).error)
        // trip under day (day's parent is trip): a cycle.
        let trip = try db.fetchRecord(w.trip.recordID)
        trip.parent = w.day.recordID
        error = try XCTUnwrap(try db.modifyRecords(saving: [trip]).firstError)
        XCTAssertEqual(error.code, .referenceViolation)
        XCTAssertTrue(error.message.contains("cycle"), error.message)
        trip.parent = trip.recordID
        XCTAssertEqual(try db.modifyRecords(saving: [trip]).firstError?.code, .referenceViolation)
        // Another zone.
        let other = try db.saveZone("Other")
        trip.parent = RecordID(recordName: "x", zoneID: other.zoneID)
        XCTAssertEqual(try db.modifyRecords(saving: [trip]).firstError?.code, .referenceViolation)
    }
}
