import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §17 (share access requests). R38: whether a share takes access requests is the
/// owner's or an administrator's to change; it is kept, and every participant sees it.
class AccessRequestTests: XCTestCase {
    func testR38OnlyTheOwnerOrAnAdministratorChangesWhetherAShareTakesRequests() throws {
        let w = try World()
        let s = try w.share(["bob@example.com"])
        XCTAssertFalse(s.allowsAccessRequests, "off by default")
        try w.accept(s.url!, in: w.bc)

        // The owner turns it on; it is kept, and Bob's copy shows it.
        let owned = try share(w, s.recordID)
        owned.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
        let bobs = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        XCTAssertTrue(bobs.allowsAccessRequests, "every participant sees it")

        // Bob, a participant, cannot turn it off, under any policy; nothing changes.
        for policy in RecordSavePolicy.allCases {
            let copy = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
            copy.allowsAccessRequests = false
            let error = try w.bc.sharedCloudDatabase.modifyRecords(saving: [copy], savePolicy: policy).firstError
            XCTAssertEqual(error?.code, .permissionFailure, "\(policy): \(String(describing: error))")
        }
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)

        // A copy that leaves it alone saves under changedKeys without turning it back (R29).
        let stale = try share(w, s.recordID)
        let fresh = try share(w, s.recordID)
        fresh.allowsAccessRequests = false
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fresh]).error)
        stale.title = "renamed"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [stale], savePolicy: .changedKeys).error)
        XCTAssertFalse(try share(w, s.recordID).allowsAccessRequests, "a copy that did not change it writes it not")

        // Made an administrator, Bob may change it.
        let promote = try share(w, s.recordID)
        promote.participants.first { $0.role == .privateUser }?.role = .administrator
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [promote]).error)
        let admins = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        admins.allowsAccessRequests = true
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [admins]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
    }

    func testR38ANewShareMayTakeRequestsFromItsFirstSave() throws {
        let w = try World()
        let root = Record(recordType: "Trip", recordID: RecordID(recordName: "open", zoneID: w.zone.zoneID))
        let s = Share(rootRecord: root)
        s.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [root, s]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
    }
}

extension AccessRequestTests: RecordRuleSupport {}
