import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R37: in the shared database an item outside every share the caller may write answers
/// exactly as a missing one — whatever the request — and a pending invitee's shared database
/// is a stranger's until they accept.
class SharedScopePrivacyTests: XCTestCase {
    /// Alice shares the trip (and its day) with Bob, read-write; the zone also holds a private
    /// "secret" record of another type, outside the share.
    func world() throws -> (World, Share) {
        let w = try World()
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        let secret = Record(recordType: "Secret", recordID: RecordID(recordName: "secret", zoneID: w.zone.zoneID))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [secret]).error)
        try w.accept(share.url!, in: w.bc)
        return (w, share)
    }

    func answer(_ result: ModifyResult) -> String {
        guard let e = result.firstError else { return "ok" }
        // The shape of the message: the record's own name replaced, nothing else.
        return "\(e.code): " + e.message.replacingOccurrences(of: "secret", with: "X").replacingOccurrences(of: "nothing-here", with: "X")
    }

    func testAnOutsideRecordAnswersAsAMissingOne() throws {
        let (w, _) = try world()
        let db = w.bc.sharedCloudDatabase
        let zone = w.zone.zoneID
        // Create with a taken name outside the share vs a free name: same answer, no type.
        let taken = answer(try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "secret", zoneID: zone))]))
        let free = answer(try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "nothing-here", zoneID: zone))]))
        XCTAssertEqual(taken, free)
        XCTAssertFalse(taken.contains("Secret"), taken)
        // Delete: the same message for an outside record and a missing one.
        XCTAssertEqual(
            answer(try db.modifyRecords(deleting: [RecordID(recordName: "secret", zoneID: zone)])),
            answer(try db.modifyRecords(deleting: [RecordID(recordName: "nothing-here", zoneID: zone)]))
        )
        // A parent outside the share and a missing parent: the same answer.
        func child(_ parent: String) -> Record {
            Record(
                recordType: "Day",
                recordID: RecordID(recordName: "d-\(UUID().uuidString.prefix(4))", zoneID: zone),
                parent: RecordID(recordName: parent, zoneID: zone)
            )
        }
        let outside = try db.modifyRecords(saving: [child("secret")]).firstError
        let missing = try db.modifyRecords(saving: [child("nothing-here")]).firstError
        XCTAssertEqual(outside?.code, missing?.code)
        XCTAssertEqual(outside?.code, .permissionFailure)
    }

    func testAPendingInviteesSharedDatabaseIsAStrangers() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        let db = w.bc.sharedCloudDatabase
        for attempt in [
            { _ = try db.fetchRecord(w.trip.recordID) },
            { _ = try db.records(matching: Query(recordType: "Trip"), inZoneWith: w.zone.zoneID) },
            {
                if let e = try db.modifyRecords(saving: [Record(recordType: "Day", recordID: RecordID(recordName: "x", zoneID: w.zone.zoneID))])
                    .firstError
                {
                    throw e
                }
            },
        ] {
            XCTAssertThrowsError(try attempt()) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .zoneNotFound, "\(error)")
            }
        }
        try w.accept(share.url!, in: w.bc)
        XCTAssertEqual(try db.fetchRecord(w.trip.recordID).recordID.recordName, "lisbon")
    }
}
