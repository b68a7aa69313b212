import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// Rules R1–R20 through the Swift API (the Lua side is in Tests/lua/rules_test.lua).
class RulesTests: XCTestCase {
    func testR1LookupNormalisationAndErrors() throws {
        XCTAssertEqual(try LookupInfo(emailAddress: "  Bob@Example.COM ").emailAddress, "bob@example.com")
        XCTAssertEqual(try LookupInfo(phoneNumber: "+1 (415) 555-0101").phoneNumber, "+14155550101")
        XCTAssertEqual(try LookupInfo(phoneNumber: "+44.20.7946.0958").phoneNumber, "+442079460958")
        for bad in ["bob", "bob@", "@x.com", "a b@x.com", "bob@localhost"] {
            XCTAssertThrowsError(try LookupInfo(emailAddress: bad)) { e in
                let error = e as! ShareFlowError
                XCTAssertEqual(error.code, .invalidArguments)
                XCTAssertTrue(error.message.contains("'\(bad)'"), error.message)
            }
        }
        for bad in ["4155550101", "+12", "+1234567890123456", "+1 415 CALL NOW"] {
            XCTAssertThrowsError(try LookupInfo(phoneNumber: bad), bad)
        }
        XCTAssertThrowsError(try LookupInfo(emailAddress: "a@b.co", phoneNumber: "+14155550100", userRecordID: nil))
    }

    func testR2IdentityRevealsNameOnlyWhenDiscoverable() throws {
        let w = try World()
        XCTAssertEqual(try w.participant("bob@example.com").userIdentity.nameComponents?.givenName, "Bob")
        XCTAssertNil(try w.participant("carol@example.com").userIdentity.nameComponents)
        let nobody = try w.participant("nobody@example.com").userIdentity
        XCTAssertNil(nobody.userRecordID)
        XCTAssertFalse(nobody.hasiCloudAccount)
    }

    func testR3SharingOnlyInPrivateCustomZones() throws {
        let w = try World()
        let defaultZone = RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)
        let note = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: defaultZone))
        var r = try w.c.privateCloudDatabase.modifyRecords(saving: [note, Share(rootRecord: note)])
        XCTAssertEqual(r.saved.count, 1)
        XCTAssertEqual(r.firstError?.code, .invalidArguments)
        let publicZone = RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: Engine.publicOwnerName)
        let pub = Record(recordType: "Note", recordID: RecordID(recordName: "p", zoneID: publicZone))
        r = try w.c.publicCloudDatabase.modifyRecords(saving: [pub, Share(rootRecord: pub)])
        XCTAssertEqual(r.firstError?.code, .badDatabase)
    }

    func testR5ShareWithoutRootAndAlreadyShared() throws {
        let w = try World()
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day])
        var r = try w.c.privateCloudDatabase.modifyRecords(saving: [Share(rootRecord: w.trip)])
        XCTAssertEqual(r.firstError?.code, .invalidArguments)
        XCTAssertTrue(r.firstError!.message.contains("R5"))
        try w.share()
        r = try w.c.privateCloudDatabase.modifyRecords(saving: [w.day, Share(rootRecord: w.day)])
        XCTAssertEqual(r.firstError?.code, .alreadyShared)
        r = try w.c.privateCloudDatabase.modifyRecords(saving: [Share(zoneID: w.zone.zoneID)])
        XCTAssertEqual(r.firstError?.code, .alreadyShared)
    }

    func testR6URLsAreRandomAndStable() throws {
        let tokens: [String] = (0..<200).map { _ in Engine.newShareToken() }
        XCTAssertEqual(Set(tokens).count, tokens.count)
        for token in tokens {
            XCTAssertGreaterThanOrEqual(token.count * 6, 128, "at least 128 random bits")
            XCTAssertTrue(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        }
        let w = try World()
        let share = try w.share()
        let url = share.url
        share.title = "New title"
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        XCTAssertEqual(share.url, url)
        XCTAssertEqual(share.url, "https://shareflow.invalid/share/" + (share.shortGUID ?? "?"), "the URL is the public URL and the token")
        // A URL is known by its token: another host, a query or an iOS-style #title fragment
        // name the same share; a URL without a token names none.
        for other in ["http://localhost:8080/share/\(share.shortGUID!)", url! + "#New%20title", url! + "?via=mail"] {
            XCTAssertEqual(try w.c.fetchShareMetadataResults([other]).0[0].1.get().share.recordID, share.recordID, other)
        }
        XCTAssertEqual(Engine.shareToken(url: "https://shareflow.invalid/share/"), nil)
        XCTAssertEqual(Engine.shareToken(url: "https://shareflow.invalid/"), nil)
        // The last `/share/`, up to a fragment, a query or a slash; nothing but printable ASCII.
        let urls: [(String, String?)] = [
            ("https://x/share/abc/share/def", "def"), ("https://x/share/tok#Lisbon%20trip", "tok"), ("https://x/share/tok?x=1", "tok"),
            ("https://x/share/tok/more", "tok"), ("/share/t", "t"), ("https://x/share/é", nil), ("https://x/share/a b", nil),
            ("https://x/share/a\u{0}b", nil), ("", nil), ("/share/", nil), ("share/abc", nil), ("https://x/share/#frag", nil),
            ("https://x/Share/abc", nil), ("/share//share/x", "x"),
        ]
        for (url, token) in urls { XCTAssertEqual(Engine.shareToken(url: url), token, url) }
        w.engine.options.publicURL = "https://share.example.com"
        let again = try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share
        XCTAssertEqual(again?.url, "https://share.example.com/share/" + share.shortGUID!)
    }

    func testR7R8ParticipantDefaultsAndLimit() throws {
        var options = Engine.Options()
        options.maxParticipants = 3
        let w = try World(engine: Engine(store: TestStore.make(), options: options))
        let p = try w.participant("bob@example.com")
        XCTAssertEqual([p.role.rawValue, p.permission.rawValue, p.acceptanceStatus.rawValue], ["privateUser", "readOnly", "unknown"])
        let share = try w.share(["bob@example.com", "carol@example.com"])
        XCTAssertEqual(share.participants.map(\.acceptanceStatus), [.accepted, .pending, .pending])
        share.addParticipant(try w.participant("dave@example.com"))
        let r = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        XCTAssertEqual(r.firstError?.code, .tooManyParticipants)
        XCTAssertEqual(try (w.c.privateCloudDatabase.fetchRecord(share.recordID) as! Share).participants.count, 3)
    }

    func testR11PublicPermissionRemovesPendingThenAll() throws {
        let w = try World()
        let share = try w.share(["bob@example.com", "carol@example.com"])
        try w.accept(share.url!, in: w.bc)
        var removed: [String] = []
        w.engine.events.observe(.participantRemoved) { removed.append("\($0.participant!.userIdentity.lookupInfo!.value):\($0.reason!)") }
        let fresh = try w.c.privateCloudDatabase.fetchRecord(share.recordID) as! Share
        fresh.publicPermission = .readOnly
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [fresh])
        XCTAssertEqual(removed, ["carol@example.com:publicPermissionChanged"])
        fresh.publicPermission = .none
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [fresh])
        XCTAssertEqual(removed.count, 2)
        XCTAssertEqual(fresh.participants.map(\.role), [.owner])
    }

    func testR12R18AcceptIsAtomicAndVisibilityFollowsStatus() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        XCTAssertThrowsError(try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID))
        let accepted = try w.accept(share.url!, in: w.bc)
        XCTAssertEqual(accepted.currentUserParticipant?.acceptanceStatus, .accepted)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID).recordType, "Day")
        XCTAssertEqual(try w.accept(share.url!, in: w.bc).currentUserParticipant?.acceptanceStatus, .accepted, "again: no change")
        let stale = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        XCTAssertEqual(stale.firstError?.code, .serverRecordChanged, "bob's acceptance changed the share (R21)")
        let fresh = try XCTUnwrap(w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        fresh.removeParticipant(fresh.participants[1])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fresh]).error)
        XCTAssertThrowsError(try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID)) { e in
            XCTAssertEqual((e as! ShareFlowError).code, .zoneNotFound, "no longer shared with bob: as if it did not exist (R27)")
        }
        XCTAssertThrowsError(try w.accept(share.url!, in: w.bc)) { e in
            XCTAssertEqual((e as! ShareFlowError).code, .permissionFailure)
        }
    }

    func testR13R14WritesDeletesAndLeaving() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        share.addParticipant(try w.participant("carol@example.com"))
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        try w.accept(share.url!, in: w.bc)
        try w.accept(share.url!, in: w.cc)
        let day = try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID)
        day["n"] = .integer(2)
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [day]).error)
        let carolDay = try w.cc.sharedCloudDatabase.fetchRecord(w.day.recordID)
        carolDay["n"] = .integer(3)
        XCTAssertEqual(try w.cc.sharedCloudDatabase.modifyRecords(saving: [carolDay]).firstError?.code, .permissionFailure)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).firstError?.code, .permissionFailure)
        XCTAssertNil(try w.cc.sharedCloudDatabase.modifyRecords(deleting: [share.recordID]).error, "carol leaves")
        XCTAssertThrowsError(try w.cc.sharedCloudDatabase.fetchRecord(w.trip.recordID))
        XCTAssertNoThrow(try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID), "the share stays for bob")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).error, "owner deletes root")
        XCTAssertThrowsError(try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID))
    }

    func testR16R17VerificationFlow() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        XCTAssertEqual(w.cc.fetchShareMetadataResults([share.url!]).1?.partialErrors.first?.error.code, .unknownItem)
        share.addParticipant(try w.participant("carol.work@example.com"))
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [share])
        XCTAssertEqual(w.cc.fetchShareMetadataResults([share.url!]).1?.partialErrors.first?.error.code, .participantMayNeedVerification)
        try w.engine.accounts.addEmail("carol.work@example.com", to: w.carol)
        XCTAssertEqual(try w.accept(share.url!, in: w.cc).currentUserParticipant?.acceptanceStatus, .accepted)
    }

    func testR19R20DiscoveryNeverRevealsNonDiscoverable() throws {
        let w = try World()
        try w.engine.accounts.addContacts(
            [
                ("bob@example.com", "c-bob"), ("+14155550101", "c-bob-phone"),
                ("carol@example.com", "c-carol"), ("nobody@example.com", nil),
            ],
            to: w.alice
        )
        let found = w.c.discoverAllUserIdentityResults().0
        XCTAssertEqual(found.map(\.userRecordID), [w.bob.userRecordID])
        XCTAssertEqual(found[0].contactIdentifiers, ["c-bob", "c-bob-phone"])
        let direct = w.c.discoverUserIdentityResults([
            LookupRequest(emailAddress: "carol@example.com"),
            LookupRequest(emailAddress: "bob@example.com"),
            LookupRequest(emailAddress: "nobody@example.com"),
        ]).0
        XCTAssertEqual(direct.map(\.userRecordID), [w.bob.userRecordID], "carol (not discoverable) looks like nobody")
    }

    func testDataPersistsAcrossEngines() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sf-\(UUID()).sqlite").path
        var url: String?
        do {
            let w = try World(engine: Engine(store: Store(path: path)))
            url = try w.share(["bob@example.com"]).url
        }
        let engine = try Engine(store: Store(path: path))
        let bob = try engine.session(for: "bob@example.com").container(World.containerID)
        let (metas, error) = bob.fetchShareMetadataResults([url!])
        XCTAssertNil(error)
        XCTAssertEqual(try metas[0].1.get().share.title, "Lisbon trip")
        XCTAssertEqual(try engine.store.integrityCheck(), "ok")
    }
}
