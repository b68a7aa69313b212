import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R22's bounds on one record: its bytes and its number of fields, refused before any key is
/// looked at.
class RecordLimitsTests: XCTestCase {
    func testARecordHoldsAtMost1024Fields() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        var fields: [String: FieldValue] = [:]
        for i in 0..<ModifyLimits.maxFields { fields["k\(i)"] = .integer(Int64(i)) }
        let full = Record(recordType: "Wide", recordID: RecordID(recordName: "full", zoneID: w.zone.zoneID), fields: fields)
        XCTAssertNil(try db.modifyRecords(saving: [full]).error)
        fields["one_more"] = .integer(0)
        let over = Record(recordType: "Wide", recordID: RecordID(recordName: "over", zoneID: w.zone.zoneID), fields: fields)
        let error = try db.modifyRecords(saving: [over]).firstError
        XCTAssertEqual(error?.code, .limitExceeded)
        XCTAssertTrue(error?.message.contains("1025 fields") == true, "\(String(describing: error))")
        // A partial copy adding one key to a full record is refused too: the merged record counts.
        let copy = try db.fetchRecord(full.recordID)
        copy["extra"] = .string("x")
        XCTAssertEqual(try db.modifyRecords(saving: [copy], savePolicy: .changedKeys).firstError?.code, .limitExceeded)
    }
}
