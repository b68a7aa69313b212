import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R35: a share's participant list is always saved as `ifServerRecordUnchanged`, whatever the
/// save policy: a stale copy that would change the participants fails with
/// `serverRecordChanged` and changes nothing; a stale copy that leaves them alone saves.
class ShareParticipantConflictTests: XCTestCase {
    func testAStaleCopyCannotChangeParticipantsUnderAnyPolicy() throws {
        for policy in [RecordSavePolicy.changedKeys, .allKeys] {
            let w = try World()
            let share = try w.share(["bob@example.com", "carol@example.com"])
            let stale = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
            try w.accept(share.url!, in: w.bc)  // renews the share's change tag
            let carol = try XCTUnwrap(stale.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "carol@example.com" })
            stale.removeParticipant(carol)
            let error = try w.c.privateCloudDatabase.modifyRecords(saving: [stale], savePolicy: policy).firstError
            XCTAssertEqual(error?.code, .serverRecordChanged, "\(policy)")
            XCTAssertTrue(error?.message.contains("R35") == true, error?.message ?? "")
            XCTAssertNotNil(error?.conflict?.server, "the error carries the server's share to merge from")
            let now = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
            XCTAssertEqual(
                Set(now.participants.filter { $0.acceptanceStatus != .removed }.compactMap { $0.userIdentity.lookupInfo?.emailAddress }),
                ["alice@example.com", "bob@example.com", "carol@example.com"],
                "\(policy): nothing changed"
            )
            XCTAssertEqual(now.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" }?.acceptanceStatus, .accepted)
        }
    }

    func testAStaleCopyThatLeavesParticipantsAloneSaves() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let stale = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        try w.accept(share.url!, in: w.bc)
        stale.title = "Renamed"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [stale], savePolicy: .changedKeys).firstError)
        let now = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        XCTAssertEqual(now.title, "Renamed")
        XCTAssertEqual(now.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" }?.acceptanceStatus, .accepted)
    }
}
