import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R24: a record made without a zone lands in the default zone of the database it is saved
/// to, and a default zone nothing was saved in reads empty. Each test is a finding of issue 13.
class DefaultZoneTests: XCTestCase {
    func testR24ARecordWithoutAZoneGoesToTheDefaultZone() throws {
        let w = try World()
        let note = Record(recordType: "Note", recordName: "n1", fields: ["t": .string("hi")])
        XCTAssertEqual(note.recordID.zoneID, .default)
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [note])
        XCTAssertNil(result.error)
        XCTAssertEqual(
            result.saved.first?.recordID.zoneID,
            RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)
        )
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(note.recordID)["t"], .string("hi"))
        let pub = Record(recordType: "Note", recordName: "p1")
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [pub]).error)
        XCTAssertEqual(try w.bc.publicCloudDatabase.fetchRecord(pub.recordID).recordType, "Note")
    }

    /// A default zone read before anything was saved in it is empty: reading it made the zone,
    /// a write inside a read, and the public database answered serviceUnavailable ("read-only").
    func testR24AnUntouchedDefaultZoneReadsEmpty() throws {
        let w = try World()
        for db in [w.c.publicCloudDatabase, w.c.privateCloudDatabase] {
            XCTAssertThrowsError(try db.fetchRecord(RecordID(recordName: "nope", zoneID: .default))) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .unknownItem, "\(db.databaseScope): \(error)")
            }
            let page = try db.records(
                matching: Query(recordType: "Note", predicate: .all, sortDescriptors: []),
                inZoneWith: nil,
                desiredKeys: nil,
                resultsLimit: nil,
                after: nil
            )
            XCTAssertEqual(page.records.count, 0)
        }
    }
}
