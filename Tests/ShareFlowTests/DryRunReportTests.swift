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

    /// SPEC §17 in the report: a request made, then approved (the request gone, an approved
    /// requester added), a block, and a one-time link's participant shown as nobody yet.
    func testAccessRequestsBlocksAndLinksAreReported() throws {
        let w = try World()
        let s = try w.share()
        let owned = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(s.recordID) as? Share)
        owned.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        let before = try w.engine.snapshot()
        _ = w.bc.requestShareAccessResults([s.url!])
        _ = w.cc.requestShareAccessResults([s.url!])
        var report = before.changes(to: try w.engine.snapshot())
        XCTAssertEqual(report.counts["requests"], ["+": 2], "\(report.lines)")
        XCTAssertTrue(report.lines.contains("  + request from bob@example.com"), "\(report.lines)")
        let middle = try w.engine.snapshot()
        let review = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(s.recordID) as? Share)
        review.approveRequesters(review.requesters.filter { $0.participantLookupInfo == .emailAddress("bob@example.com") })
        review.blockRequesters(review.requesters.filter { $0.participantLookupInfo == .emailAddress("carol@example.com") })
        review.addParticipant(Participant.oneTimeURLParticipant())
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [review]).error)
        report = middle.changes(to: try w.engine.snapshot())
        XCTAssertEqual(report.counts["requests"], ["-": 2], "\(report.lines)")
        XCTAssertEqual(report.counts["blocks"], ["+": 1], "\(report.lines)")
        XCTAssertTrue(report.lines.contains("  + participant bob@example.com: privateUser readOnly pending, approved requester"), "\(report.lines)")
        XCTAssertTrue(report.lines.contains("  + participant (one-time link): privateUser readOnly pending"), "\(report.lines)")
        XCTAssertTrue(report.lines.contains("  + block carol@example.com"), "\(report.lines)")
    }
}
