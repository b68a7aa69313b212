import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §15: a request's item delays, natively slept on the caller's thread, come to
/// `FaultScope.maxDelayMs` at most, as over HTTP.
class FaultDelayTests: XCTestCase {
    func testANativeRequestsItemDelaysAreCappedAsOverHTTP() throws {
        let w = try World()
        try w.engine.faults.add(
            try FaultRule(
                ["recordName": .string("n-*"), "fault": .string("partialFailure"), "latencyMs": .number(400)],
                name: "t"
            )
        )
        let records = (1...3).map { Record(recordType: "Note", recordID: RecordID(recordName: "n-\($0)", zoneID: w.zone.zoneID)) }
        // A request that has slept all but 100 ms of its allowance already.
        let scope = FaultScope(native: "modifyRecords")
        scope.delayMs = FaultScope.maxDelayMs - 100
        let start = Date()
        let result = try FaultScope.run(scope) { try w.c.privateCloudDatabase.modifyRecords(saving: records, atomically: false) }
        let slept = Date().timeIntervalSince(start)
        XCTAssertEqual(result.saveResults.filter { (try? $0.1.get()) == nil }.count, 3, "each item failed as the rule says")
        XCTAssertEqual(scope.delayMs, FaultScope.maxDelayMs)
        XCTAssertGreaterThanOrEqual(slept, 0.09)
        XCTAssertLessThan(slept, 0.9, "100 ms left to sleep, not 3 × 400 ms")

        // A fresh request sleeps each item's delay in full, under the cap.
        let fresh = FaultScope(native: "modifyRecords")
        let again = Date()
        _ = try FaultScope.run(fresh) { try w.c.privateCloudDatabase.modifyRecords(saving: records, atomically: false) }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(again), 1.15)
        XCTAssertEqual(fresh.delayMs, 1_200)
    }
}
