import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// A one-record read in the caller's own private database or the public one is one statement
/// (`StoreTransaction.ownRecord`, issue 48): it answers as the general path does (R3, R12,
/// R24), in the same order — the caller, the zone they may address, whether it exists, the
/// record — with the same words.
class OwnRecordReadTests: XCTestCase {
    private func error(_ body: () throws -> Record) -> ShareFlowError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? ShareFlowError
        }
    }

    func testItsAnswersAreTheGeneralPathsAnswers() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        XCTAssertNil(try db.modifyRecords(saving: [w.trip, w.day]).error)

        // Found, with its parent, creator, modifier and change tag as saved.
        let day = try db.fetchRecord(w.day.recordID)
        XCTAssertEqual(day.parent, w.trip.recordID)
        XCTAssertEqual(day.creatorUserRecordID?.recordName, w.alice.userRecordID)
        XCTAssertEqual(day.lastModifiedUserRecordID?.recordName, w.alice.userRecordID)
        XCTAssertEqual(try db.fetchRecord(w.trip.recordID)["title"], .string("Lisbon"))

        // R24: the current user's name stands for the caller.
        let mine = RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: "Trips", ownerName: RecordZoneID.currentUserName))
        XCTAssertEqual(try db.fetchRecord(mine).recordID.zoneID.ownerName, w.alice.userRecordID)

        // No such record in a zone that exists.
        var e = error { try db.fetchRecord(RecordID(recordName: "porto", zoneID: w.zone.zoneID)) }
        XCTAssertEqual(e?.code, .unknownItem)

        // A zone never saved: named with the caller's address.
        e = error { try db.fetchRecord(RecordID(recordName: "x", zoneID: RecordZoneID(zoneName: "Nowhere", ownerName: w.alice.userRecordID))) }
        XCTAssertEqual(e?.code, .zoneNotFound)
        XCTAssertTrue(e?.message.contains("alice@example.com") == true, "\(String(describing: e))")

        // Another user's private zone is refused before anything is read, whether it exists
        // or not, in the caller's words.
        for name in ["Trips", "Nowhere"] {
            e = error {
                try w.bc.privateCloudDatabase.fetchRecord(
                    RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: name, ownerName: w.alice.userRecordID))
                )
            }
            XCTAssertEqual(e?.code, .permissionFailure, name)
            XCTAssertTrue(e?.message.contains("bob@example.com") == true, "\(String(describing: e))")
        }

        // A default zone nothing was saved in reads empty; saved in, it answers.
        e = error { try db.fetchRecord(RecordID(recordName: "n", zoneID: .default)) }
        XCTAssertEqual(e?.code, .unknownItem)
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Note", recordName: "n")]).error)
        XCTAssertEqual(try db.fetchRecord(RecordID(recordName: "n", zoneID: .default)).recordType, "Note")

        // Public: the default zone only, anyone's records read by anyone.
        let pub = w.c.publicCloudDatabase
        e = error { try pub.fetchRecord(RecordID(recordName: "p", zoneID: .default)) }
        XCTAssertEqual(e?.code, .unknownItem)
        XCTAssertNil(try pub.modifyRecords(saving: [Record(recordType: "Post", recordName: "p")]).error)
        XCTAssertEqual(try w.bc.publicCloudDatabase.fetchRecord(RecordID(recordName: "p", zoneID: .default)).recordType, "Post")
        e = error { try pub.fetchRecord(RecordID(recordName: "p", zoneID: RecordZoneID(zoneName: "Trips", ownerName: w.alice.userRecordID))) }
        XCTAssertEqual(e?.code, .zoneNotFound)
    }

    /// A share read in its owner's private database is the whole share, its participants
    /// included; a record a share is rooted at names it.
    func testASharesReadIsTheWholeShare() throws {
        let w = try World()
        let share = Share(rootRecord: w.trip)
        share.addParticipant(try w.participant("bob@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, share]).error)
        let read = try w.c.privateCloudDatabase.fetchRecord(share.recordID)
        XCTAssertTrue(read is Share)
        XCTAssertEqual((read as? Share)?.participants.count, 2)
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID).share, share.recordID)
    }
}
