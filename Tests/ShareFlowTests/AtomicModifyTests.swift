import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R22: a modify call in a custom zone is all or nothing (a failing share leaves its root
/// unsaved), one in the default zone never is, and a call's items and a record's size are
/// limited. Each test is a finding of issue 13 that failed on main before it; the Lua side is
/// Tests/lua/records_test.lua.
class AtomicModifyTests: XCTestCase {
    func testR22AFailingShareLeavesItsRootUnsaved() throws {
        var options = Engine.Options()
        options.maxParticipants = 2
        let w = try World(engine: Engine(store: TestStore.make(), options: options))
        let s = Share(rootRecord: w.trip)
        s.addParticipant(try w.participant("bob@example.com"))
        s.addParticipant(try w.participant("carol@example.com"))
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day, s])
        XCTAssertEqual(result.error(for: s)?.code, .tooManyParticipants)
        XCTAssertEqual(result.error(for: w.trip)?.code, .batchRequestFailed)
        XCTAssertEqual(result.error(for: w.trip)?.codeNumber, 22)
        XCTAssertEqual(result.error(for: w.day)?.code, .batchRequestFailed)
        XCTAssertTrue(result.saved.isEmpty)
        XCTAssertNil(w.trip.recordChangeTag, "nothing committed, nothing stamped")
        XCTAssertThrowsError(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID))
        // Not atomic: each item on its own.
        let loose = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day, s], atomically: false)
        XCTAssertEqual(loose.saved.count, 2)
        XCTAssertEqual(loose.firstError?.code, .tooManyParticipants)
    }

    func testR22TheDefaultZoneIsNotAtomic() throws {
        let w = try World()
        let zone = RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)
        let good = Record(recordType: "Note", recordID: RecordID(recordName: "good", zoneID: zone))
        let orphan = Record(
            recordType: "Note",
            recordID: RecordID(recordName: "orphan", zoneID: zone),
            parent: RecordID(recordName: "missing", zoneID: zone)
        )
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [good, orphan])
        XCTAssertEqual(result.saved.map(\.recordID.recordName), ["good"])
        XCTAssertEqual(result.firstError?.code, .referenceViolation)
    }

    func testR22Limits() throws {
        let w = try World()
        let many = (0...400).map { Record(recordType: "N", recordID: RecordID(recordName: "n\($0)", zoneID: w.zone.zoneID)) }
        XCTAssertThrowsError(try w.c.privateCloudDatabase.modifyRecords(saving: many)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .limitExceeded)
            XCTAssertEqual((e as? ShareFlowError)?.codeNumber, 27)
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: Array(many.prefix(400))).error)
        let big = Record(
            recordType: "N",
            recordID: RecordID(recordName: "big", zoneID: w.zone.zoneID),
            fields: ["blob": .string(String(repeating: "x", count: 1_000_001))]
        )
        let error = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [big]).firstError)
        XCTAssertEqual(error.code, .limitExceeded)
        XCTAssertTrue(error.message.contains("big"), error.message)
    }
}
