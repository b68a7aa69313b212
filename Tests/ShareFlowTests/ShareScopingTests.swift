import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// What a share covers stays what R5, R12, R13 and R34 say under moves, re-made names and
/// reused objects (found by an attack pass on records round 3).
class ShareScopingTests: XCTestCase {
    /// Porto (no share) has `secret` below it, shared with Carol; trip is shared with Bob.
    private func twoShares() throws -> (World, porto: Record, secret: Record) {
        let w = try World()
        try w.accept(try XCTUnwrap(w.share(["bob@example.com"]).url), in: w.bc)
        let z = w.zone.zoneID
        let porto = Record(recordType: "Trip", recordID: RecordID(recordName: "porto", zoneID: z))
        let secret = Record(
            recordType: "Day",
            recordID: RecordID(recordName: "secret", zoneID: z),
            fields: ["note": .string("carol only")],
            parent: porto.recordID
        )
        let s2 = Share(rootRecord: secret)
        s2.addParticipant(try w.participant("carol@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [porto, secret, s2]).error)
        try w.accept(try XCTUnwrap(s2.url), in: w.cc)
        return (w, porto, secret)
    }

    func testMovingAnAncestorOfAShareUnderAnotherShareIsAlreadyShared() throws {
        let (w, porto, secret) = try twoShares()
        let moved = try w.c.privateCloudDatabase.fetchRecord(porto.recordID)
        moved.parent = w.trip.recordID
        let error = try w.c.privateCloudDatabase.modifyRecords(saving: [moved]).firstError
        XCTAssertEqual(error?.code, .alreadyShared, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("secret") == true, "\(String(describing: error))")
        let page = try w.bc.sharedCloudDatabase.records(matching: Query(recordType: "Day"), inZoneWith: w.zone.zoneID)
        XCTAssertEqual(page.records.map(\.recordID.recordName), ["day1"], "Bob sees his share only")
        XCTAssertThrowsError(try w.bc.sharedCloudDatabase.fetchRecord(secret.recordID))
    }

    func testMakingAgainAboveAnotherSharesRootIsAlreadyShared() throws {
        let (w, porto, _) = try twoShares()
        let db = w.c.privateCloudDatabase
        XCTAssertNil(try db.modifyRecords(deleting: [porto.recordID]).error)
        let again = Record(recordType: "Trip", recordID: porto.recordID, parent: w.trip.recordID)
        XCTAssertEqual(try db.modifyRecords(saving: [again]).firstError?.code, .alreadyShared)
        // Made again outside any share, it is fine.
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: porto.recordID)]).error)
    }

    func testAParticipantCannotTakeARecordOutOfTheShareByClearingItsParent() throws {
        for policy in RecordSavePolicy.allCases {
            let w = try World()
            try w.accept(try XCTUnwrap(w.share(["bob@example.com"], permission: .readWrite).url), in: w.bc)
            let day = try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID)
            day.parent = nil
            XCTAssertEqual(
                try w.bc.sharedCloudDatabase.modifyRecords(saving: [day], savePolicy: policy).firstError?.code,
                .permissionFailure,
                "\(policy)"
            )
            XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(w.day.recordID).parent?.recordName, "lisbon", "\(policy)")
        }
    }

    func testAParticipantCannotPullOrphansBackIntoTheShare() throws {
        let w = try World()
        try w.accept(try XCTUnwrap(w.share(["bob@example.com"], permission: .readWrite).url), in: w.bc)
        let db = w.c.privateCloudDatabase
        let kid = Record(recordType: "Note", recordID: RecordID(recordName: "kid", zoneID: w.zone.zoneID), parent: w.day.recordID)
        XCTAssertNil(try db.modifyRecords(saving: [kid]).error)
        XCTAssertNil(try db.modifyRecords(deleting: [w.day.recordID]).error)
        let again = Record(recordType: "Day", recordID: w.day.recordID, parent: w.trip.recordID)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.modifyRecords(saving: [again]).firstError?.code, .permissionFailure)
        XCTAssertThrowsError(try w.bc.sharedCloudDatabase.fetchRecord(kid.recordID), "the orphan stays out of the share")
        // A new name of his own is fine.
        let mine = Record(recordType: "Day", recordID: RecordID(recordName: "day2", zoneID: w.zone.zoneID), parent: w.trip.recordID)
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [mine]).error)
    }

    func testOneParticipantObjectOnTwoSharesGetsAPlaceOnEach() throws {
        let w = try World()
        let p = try w.participant("bob@example.com")
        let db = w.c.privateCloudDatabase
        let first = Share(rootRecord: w.trip)
        first.addParticipant(p)
        XCTAssertNil(try db.modifyRecords(saving: [w.trip, first]).error)
        let other = try db.saveZone("Other")
        let root = Record(recordType: "Trip", recordID: RecordID(recordName: "porto", zoneID: other.zoneID))
        let second = Share(rootRecord: root)
        second.addParticipant(p)
        XCTAssertNil(try db.modifyRecords(saving: [root, second]).firstError)
        let ids = try w.engine.auditShares(owner: "alice@example.com").flatMap { $0.participants.filter { $0.role != .owner }.map(\.participantID) }
        XCTAssertEqual(ids.count, 2)
        XCTAssertEqual(Set(ids).count, 2, "each place has its own participant ID")
    }

    /// R21 for deletes that name their copy: the tag is checked in the engine's transaction (a
    /// second process's save in between is seen), and only once the caller may delete (R37).
    func testADeleteAtAStaleTagIsRefusedInTheTransaction() throws {
        let w = try World()
        try w.accept(try XCTUnwrap(w.share(["bob@example.com"], permission: .readWrite).url), in: w.bc)
        let db = w.c.privateCloudDatabase
        let copy = try db.fetchRecord(w.day.recordID)
        let newer = try db.fetchRecord(w.day.recordID)
        newer["note"] = .string("edited")
        XCTAssertNil(try db.modifyRecords(saving: [newer]).error)
        let stale = try db.modifyRecords(deleting: [w.day.recordID], deletingOnlyAtTags: [w.day.recordID: copy.recordChangeTag!])
        XCTAssertEqual(stale.firstError?.code, .serverRecordChanged)
        XCTAssertNoThrow(try db.fetchRecord(w.day.recordID), "nothing deleted")
        let current = try db.fetchRecord(w.day.recordID).recordChangeTag!
        XCTAssertNil(try db.modifyRecords(deleting: [w.day.recordID], deletingOnlyAtTags: [w.day.recordID: current]).error)
        // In the shared database a record outside the caller's shares is missing, tag or not.
        let outside = Record(recordType: "Trip", recordID: RecordID(recordName: "porto", zoneID: w.zone.zoneID))
        XCTAssertNil(try db.modifyRecords(saving: [outside]).error)
        let probe = try w.bc.sharedCloudDatabase.modifyRecords(deleting: [outside.recordID], deletingOnlyAtTags: [outside.recordID: "wrong"])
        XCTAssertEqual(probe.firstError?.code, .unknownItem)
    }
}
