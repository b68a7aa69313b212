import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R26: the owner makes a participant an administrator, who manages participants but cannot
/// touch the owner, give the owner's or an administrator's role, or end the share. A finding of
/// issue 13 that failed on main before it; the Lua side is Tests/lua/records_test.lua.
class AdministratorTests: XCTestCase {
    func testR26TheOwnerMakesAnAdministratorWhoManagesButCannotRule() throws {
        let w = try World()
        let dave = try w.engine.accounts.create(emails: ["dave@example.com"])
        _ = dave
        let s = try w.share(["bob@example.com"])
        try w.accept(s.url!, in: w.bc)
        let owned = try share(w, s.recordID)
        let bob = try XCTUnwrap(owned.participants.first { $0.role == .privateUser })
        bob.role = .administrator
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        XCTAssertEqual(try share(w, s.recordID).participants.first { $0.acceptanceStatus == .accepted && $0.role != .owner }?.role, .administrator)

        // Bob, administrator, adds Carol from the shared database.
        let bobsCopy = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        let (found, _) = w.bc.fetchShareParticipantResults([LookupRequest(emailAddress: "carol@example.com")])
        bobsCopy.addParticipant(try found[0].1.get())
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [bobsCopy]).error)
        XCTAssertEqual(try share(w, s.recordID).participants.count, 3)

        // He cannot make anyone an administrator, remove the owner or delete the root.
        let again = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        again.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "carol@example.com" }?.role = .administrator
        XCTAssertEqual(try w.bc.sharedCloudDatabase.modifyRecords(saving: [again]).firstError?.code, .permissionFailure)
        let third = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        third.removeParticipant(try XCTUnwrap(third.owner))
        XCTAssertNotNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [third]).firstError)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).firstError?.code, .permissionFailure)
        XCTAssertEqual(try share(w, s.recordID).owner?.acceptanceStatus, .accepted)

        // Making someone an owner is refused; the owner demotes Bob again.
        let fourth = try share(w, s.recordID)
        fourth.participants.first { $0.role == .administrator }?.role = .owner
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [fourth]).firstError?.code, .invalidArguments)
        let fifth = try share(w, s.recordID)
        fifth.participants.first { $0.role == .administrator }?.role = .privateUser
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fifth]).error)
        XCTAssertFalse(try share(w, s.recordID).participants.contains { $0.role == .administrator })
    }
}

extension AdministratorTests: RecordRuleSupport {}
