import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// A policy may call back into the engine and change the very state it is asked about: the
/// item then fails with ShareFlow's own error (unknownItem for a share deleted under the
/// accept, zoneNotFound for a zone), never a write the store refuses with SQLite's text, and
/// the store stays sound (the policy's change rolls back with the item, O6).
class ReentrantPolicyTests: XCTestCase {
    /// Engines given a meddling policy: its closure holds the world, which holds the engine,
    /// so the policy is removed at the end (the cycle would outlive the test, a leak).
    private var meddled: [Engine] = []

    override func tearDown() {
        for engine in meddled { engine.policies.removeAll(namePrefix: "meddler") }
        meddled = []
        super.tearDown()
    }

    /// Adds a policy at `point` that runs `change` the first time it is asked, then allows.
    private func onFirstDecision(_ w: World, _ point: DecisionPoint, _ change: @escaping () throws -> Void) {
        meddled.append(w.engine)
        var done = false
        w.engine.policies.add(point, name: "meddler") { _ in
            if !done {
                done = true
                try change()
            }
            return .allow
        }
    }

    /// `error` is ShareFlow's `code`, its message says `says` and shows nothing of SQLite's; the
    /// store passes its check.
    private func assertShareFlowError(
        _ error: Error?,
        _ code: ShareFlowError.Code,
        says: String,
        _ w: World,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        guard let e = error as? ShareFlowError else { return XCTFail("not a ShareFlow error: \(String(describing: error))", file: file, line: line) }
        XCTAssertEqual(e.code, code, e.message, file: file, line: line)
        XCTAssertTrue(e.message.contains(says), "\(e.message) should say \(says)", file: file, line: line)
        for sqlite in ["constraint", "CONSTRAINT", "SQL", "FOREIGN", "UNIQUE"] {
            XCTAssertFalse(e.message.contains(sqlite), e.message, file: file, line: line)
        }
        XCTAssertEqual(try w.engine.store.check().problems, [], file: file, line: line)
        XCTAssertTrue((try? w.engine.store.check().isHealthy) == true, file: file, line: line)
    }

    private func acceptError(_ w: World, _ url: String, in container: Container) -> Error? {
        do {
            try w.accept(url, in: container)
            return nil
        } catch { return error }
    }

    // MARK: share.accept

    func testAnAcceptPolicyDeletingTheShareGivesUnknownItem() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        onFirstDecision(w, .shareAccept) {
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [share.recordID]).error)
        }
        assertShareFlowError(acceptError(w, share.url!, in: w.bc), .unknownItem, says: "was deleted while it was being accepted (by a policy)", w)
        // The policy's delete rolled back with the accept: the share and Bob's invitation stand.
        let stored = try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share
        XCTAssertEqual(stored?.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" }?.acceptanceStatus, .pending)
        // Asked again, with the policy satisfied, the accept goes through.
        XCTAssertEqual(try w.accept(share.url!, in: w.bc).currentUserParticipant?.acceptanceStatus, .accepted)
    }

    /// A stranger joining a public share inserts a participant: the store refused that
    /// insert (FOREIGN KEY constraint failed) once the share was gone.
    func testAnAcceptPolicyDeletingAPublicShareAStrangerJoinsGivesUnknownItem() throws {
        let w = try World()
        let share = try w.share()
        share.publicPermission = .readOnly
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [share]).error)
        onFirstDecision(w, .shareAccept) {
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [share.recordID]).error)
        }
        assertShareFlowError(acceptError(w, share.url!, in: w.cc), .unknownItem, says: "was deleted while it was being accepted", w)
    }

    func testAnAcceptPolicyDeletingTheZoneOrTheRootGivesUnknownItem() throws {
        for deleteZone in [true, false] {
            let w = try World()
            let share = try w.share(["bob@example.com"])
            onFirstDecision(w, .shareAccept) {
                if deleteZone {
                    try w.c.privateCloudDatabase.deleteZone(w.zone.zoneID)
                } else {
                    // R13: deleting the root deletes its share.
                    XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).error)
                }
            }
            assertShareFlowError(acceptError(w, share.url!, in: w.bc), .unknownItem, says: "was deleted while it was being accepted", w)
        }
    }

    func testAnAcceptPolicyRemovingTheParticipantDecidesOnTheRemoval() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let bob = try XCTUnwrap(share.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" })
        onFirstDecision(w, .shareAccept) {
            XCTAssertTrue(try w.engine.removeParticipant(bob.participantID, reason: .removedByOwner))
        }
        assertShareFlowError(
            acceptError(w, share.url!, in: w.bc),
            .permissionFailure,
            says: "a removed participant of a private share cannot accept",
            w
        )
    }

    // MARK: share.save, share.publicPermission, participant.add

    func testASavePolicyDeletingTheShareOrItsZoneFailsThatShare() throws {
        for deleteZone in [false, true] {
            let w = try World()
            let share = try w.share(["bob@example.com"])
            onFirstDecision(w, .shareSave) {
                if deleteZone {
                    try w.c.privateCloudDatabase.deleteZone(w.zone.zoneID)
                } else {
                    XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [share.recordID]).error)
                }
            }
            share.title = "Renamed"
            let result = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
            if deleteZone {
                assertShareFlowError(
                    result.error(for: share),
                    .zoneNotFound,
                    says: "zone Trips was deleted while the share was being saved (by a policy)",
                    w
                )
            } else {
                assertShareFlowError(result.error(for: share), .unknownItem, says: "was deleted while it was being saved (by a policy)", w)
            }
            XCTAssertEqual((try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)?.title, "Lisbon trip", "nothing changed")
        }
    }

    func testASavePolicyDeletingANewSharesRootOrZoneFailsTheNewShare() throws {
        for deleteZone in [false, true] {
            let w = try World()
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day]).error)
            onFirstDecision(w, .shareSave) {
                if deleteZone {
                    try w.c.privateCloudDatabase.deleteZone(w.zone.zoneID)
                } else {
                    XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).error)
                }
            }
            let share = Share(rootRecord: w.trip)
            let result = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, share])
            if deleteZone {
                assertShareFlowError(result.error(for: share), .zoneNotFound, says: "was deleted while the share was being saved", w)
            } else {
                assertShareFlowError(
                    result.error(for: share),
                    .unknownItem,
                    says: "its root record lisbon was deleted while the share was being saved",
                    w
                )
            }
        }
    }

    func testAPublicPermissionPolicyDeletingTheShareGivesUnknownItem() throws {
        let w = try World()
        let share = try w.share()
        onFirstDecision(w, .sharePublicPermission) {
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [share.recordID]).error)
        }
        share.publicPermission = .readWrite
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        assertShareFlowError(result.error(for: share), .unknownItem, says: "was deleted while it was being saved (by a policy)", w)
    }

    func testAParticipantAddPolicyDeletingTheShareGivesUnknownItem() throws {
        let w = try World()
        let share = try w.share()
        onFirstDecision(w, .participantAdd) {
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [share.recordID]).error)
        }
        share.addParticipant(try w.participant("bob@example.com"))
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        assertShareFlowError(result.error(for: share), .unknownItem, says: "was deleted while it was being saved (by a policy)", w)
    }

    /// A policy that only decides changes nothing, and the item is not read twice for it.
    func testAPolicyThatOnlyReadsLeavesTheItemAlone() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        var asked = 0
        w.engine.policies.add(.shareAccept, name: "reader") { request in
            asked += 1
            XCTAssertNotNil(try request.share)
            return .allow
        }
        XCTAssertEqual(try w.accept(share.url!, in: w.bc).currentUserParticipant?.acceptanceStatus, .accepted)
        XCTAssertEqual(asked, 1)
        XCTAssertTrue(try w.engine.store.check().isHealthy)
    }
}
