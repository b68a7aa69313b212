import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R27: strangers learn nothing about another user's zones: a zone not shared with the caller
/// answers as a missing one, and share metadata costs the same for a live private URL as for a
/// made-up one. Each test is a finding of issue 13.
class StrangerTests: XCTestCase {
    /// A stranger got unknownItem or permissionFailure for another user's existing zone, but
    /// zoneNotFound for a missing one.
    func testR27AZoneNotSharedWithTheCallerAnswersAsAMissingOne() throws {
        let w = try World()
        _ = try w.share(["bob@example.com"])
        let missing = RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: "Nope", ownerName: w.alice.userRecordID))
        let nobody = RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: "Trips", ownerName: "_" + String(repeating: "0", count: 32)))
        func answer(_ id: RecordID) -> String {
            do {
                _ = try w.cc.sharedCloudDatabase.fetchRecord(id)
                return "found"
            } catch {
                let e = error as! ShareFlowError
                return "\(e.code): " + e.message.replacingOccurrences(of: id.zoneID.description, with: "ZONE")
            }
        }
        let existing = answer(w.trip.recordID)
        XCTAssertTrue(existing.hasPrefix("zoneNotFound"), existing)
        XCTAssertEqual(existing, answer(missing))
        XCTAssertEqual(existing, answer(nobody))
        let save = Record(recordType: "Trip", recordID: w.trip.recordID)
        XCTAssertEqual(try w.cc.sharedCloudDatabase.modifyRecords(saving: [save]).firstError?.code, .zoneNotFound)
        XCTAssertEqual(try w.cc.sharedCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).firstError?.code, .zoneNotFound)
    }

    /// FetchShareMetadata by a stranger took measurably longer for a live private URL than for
    /// a made-up one: now both run the same one statement.
    func testR27MetadataForAStrangerDoesTheSameWorkForALiveAndAMadeUpURL() throws {
        try XCTSkipIf(TestStore.isPostgres, "counts SQLite's statements through its trace hook")
        let w = try World()
        let s = try w.share(["bob@example.com"])
        final class Statements: @unchecked Sendable { var sql: [String] = [] }
        let statements = Statements()
        w.engine.store.queue.inDatabase { db in db.trace { statements.sql.append($0.description) } }
        func probe(_ url: String) -> (ShareFlowError.Code?, [String]) {
            statements.sql.removeAll()
            let (_, error) = w.cc.fetchShareMetadataResults([url])
            return (error?.partialErrors.first?.error.code, statements.sql)
        }
        let live = probe(s.url!)
        let madeUp = probe("https://shareflow.invalid/share/" + String(repeating: "A", count: 32))
        XCTAssertEqual(live.0, .unknownItem)
        XCTAssertEqual(madeUp.0, .unknownItem)
        XCTAssertEqual(live.1, madeUp.1, "the same statements for both")
    }
}
