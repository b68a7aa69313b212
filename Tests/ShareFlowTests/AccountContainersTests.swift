import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// The console's index of an account's containers (SPEC §21 C1): where it owns a zone, where a
/// share it is on and not removed from lives, where it holds a token; bounded, by identifier.
/// (The twin runs these on PostgreSQL.)
class AccountContainersTests: XCTestCase {
    func testOwnedPendingAcceptedAndTokenContainersAreListedAndRemovedOnesAreNot() throws {
        let engine = Engine(store: try TestStore.make())
        let alice = try engine.accounts.create(emails: ["alice@example.com"])
        let bob = try engine.accounts.create(emails: ["bob@example.com"])
        let carol = try engine.accounts.create(emails: ["carol@example.com"])
        XCTAssertEqual(try engine.accounts.containers(of: bob), [])
        // Alice owns zones in two containers, one in production.
        let trips = try engine.session(for: alice).container("iCloud.trips").privateCloudDatabase
        try trips.saveZone("Trips")
        let live = try engine.session(for: alice).container("iCloud.notes", environment: .production).privateCloudDatabase
        try live.saveZone("Notes")
        XCTAssertEqual(
            try engine.accounts.containers(of: alice),
            [ContainerID("iCloud.notes", .production), ContainerID("iCloud.trips", .development)]
        )
        // Bob invited (pending) to a share in iCloud.trips; Carol accepts one.
        let root = Record(recordType: "Trip", recordID: RecordID(recordName: "t", zoneID: try trips.zoneID("Trips")))
        let share = Share(rootRecord: root)
        let container = try engine.session(for: alice).container("iCloud.trips")
        for who in ["bob@example.com", "carol@example.com"] {
            let p = try container.fetchShareParticipantResults([LookupRequest(emailAddress: who)]).0[0].1.get()
            share.addParticipant(p)
        }
        XCTAssertNil(try trips.modifyRecords(saving: [root, share]).error)
        XCTAssertEqual(try engine.accounts.containers(of: bob), [ContainerID("iCloud.trips", .development)])
        let carols = try engine.session(for: carol).container("iCloud.trips")
        let md = try carols.fetchShareMetadataResults([try XCTUnwrap(share.url)]).0[0].1.get()
        _ = try carols.acceptShareResults([md]).0[0].1.get()
        XCTAssertEqual(try engine.accounts.containers(of: carol), [ContainerID("iCloud.trips", .development)])
        // Removed: no longer listed. A web token: its container is.
        let current = try XCTUnwrap(try trips.fetchRecord(share.recordID) as? Share)
        let bobP = try XCTUnwrap(current.participants.first { $0.userIdentity.userRecordID == bob.userRecordID })
        current.removeParticipant(bobP)
        XCTAssertNil(try trips.modifyRecords(saving: [current]).error)
        XCTAssertEqual(try engine.accounts.containers(of: bob), [])
        try engine.credentials.add(.webAuthToken, container: "iCloud.web", hash: String(repeating: "ab", count: 32), accountID: bob.id)
        XCTAssertEqual(try engine.accounts.containers(of: bob), [ContainerID("iCloud.web", .development)])
        // Bounded.
        XCTAssertEqual(try engine.accounts.containers(of: alice, limit: 1), [ContainerID("iCloud.notes", .production)])
        XCTAssertEqual(try engine.accounts.list(limit: 2).map(\.userRecordID), [alice.userRecordID, bob.userRecordID])
    }
}
