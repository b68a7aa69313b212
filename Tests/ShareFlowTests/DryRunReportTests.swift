import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// Point 10 of wave 3: the dry-run report pairs items by what they are, not by row IDs SQLite
/// reuses, and an item whose text is the same is not "changed".
class DryRunReportTests: XCTestCase {
    func testDeletingAZoneAndMakingAnotherIsNotARename() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).error)
        let before = try w.engine.snapshot()
        try db.deleteZone(w.zone.zoneID)
        let other = try db.saveZone("Hikes")
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: other.zoneID))]).error)
        let report = before.changes(to: try w.engine.snapshot())
        XCTAssertEqual(report.counts["zones"], ["+": 1, "-": 1], "\(report.lines)")
        XCTAssertEqual(report.counts["records"], ["+": 1, "-": 1], "\(report.lines)")
        XCTAssertFalse(report.lines.contains { $0.contains("~") }, "\(report.lines)")
    }

    func testRenamingAShareChangesTheShareNotItsParticipants() throws {
        let w = try World()
        let share = try w.share(["bob@example.com", "carol@example.com"])
        let before = try w.engine.snapshot()
        let copy = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        copy.title = "Lisbon, renamed"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [copy]).error)
        let report = before.changes(to: try w.engine.snapshot())
        XCTAssertEqual(report.counts["shares"], ["~": 1], "\(report.lines)")
        XCTAssertNil(report.counts["participants"], "\(report.lines)")
    }
}
