import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R21: every record, shares included, has a change tag that every save renews; a save follows
/// its save policy, and a stale copy (a share's too) or a new record under a taken ID is refused
/// with the three records and nothing written; R11 runs only on a real change of a share's
/// public permission. Each test is a finding of issue 13 that failed on main before it; the Lua
/// side is Tests/lua/records_test.lua.
class ChangeTagTests: XCTestCase {
    /// The first finding: a stale copy of a share made it private again and R11 then
    /// removed every participant.
    func testR21AStaleShareCopyIsRefusedAndNothingIsLost() throws {
        let w = try World()
        let original = try w.share(["bob@example.com"])
        try w.accept(original.url!, in: w.bc)
        let copyA = try share(w, original.recordID)
        let copyB = try share(w, original.recordID)
        copyA.publicPermission = .readOnly
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [copyA]).error)
        try w.accept(copyA.url!, in: w.cc)  // a public user joins
        copyB.title = "Renamed"
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [copyB])
        let error = try XCTUnwrap(result.firstError)
        XCTAssertEqual(error.code, .serverRecordChanged)
        XCTAssertEqual(error.codeNumber, 14)
        XCTAssertTrue(error.message.contains("R21"), error.message)
        let server = try XCTUnwrap(error.serverRecord as? Share)
        XCTAssertEqual(server.publicPermission, .readOnly)
        XCTAssertEqual((error.clientRecord as? Share)?.title, "Renamed")
        XCTAssertEqual((error.ancestorRecord)?.fields["cloudkit.title"], .string("Lisbon trip"))
        let now = try share(w, original.recordID)
        XCTAssertEqual(now.publicPermission, .readOnly, "nothing changed")
        XCTAssertEqual(now.title, "Lisbon trip")
        XCTAssertEqual(Set(now.participants.map(\.acceptanceStatus)), [.accepted])
        XCTAssertEqual(now.participants.count, 3, "owner, bob (accepted), carol (public)")
        // The merge: change the server's copy and save it.
        server.title = "Renamed"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [server]).error)
        XCTAssertEqual(try share(w, original.recordID).participants.count, 3)
    }

    func testR21EveryChangeOfAShareChangesItsTag() throws {
        let w = try World()
        let s = try w.share(["bob@example.com"])
        var tags = [s.recordChangeTag!]
        try w.accept(s.url!, in: w.bc)
        tags.append(try share(w, s.recordID).recordChangeTag!)
        let fresh = try share(w, s.recordID)
        fresh.title = "x"
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [fresh])
        tags.append(fresh.recordChangeTag!)
        XCTAssertEqual(Set(tags).count, 3, "\(tags)")
        XCTAssertEqual(try share(w, s.recordID).recordChangeTag, fresh.recordChangeTag, "a save stamps the saved object")
    }

    func testR21AStaleRecordCopyIsRefusedWithTheThreeRecords() throws {
        let w = try World()
        let s = try w.share(["bob@example.com"], permission: .readWrite)
        try w.accept(s.url!, in: w.bc)
        let mine = try w.c.privateCloudDatabase.fetchRecord(w.day.recordID)
        let bobs = try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID)
        bobs["plan"] = .string("tram 28")
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [bobs]).error)
        mine["plan"] = .string("stay home")
        let error = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [mine]).firstError)
        XCTAssertEqual(error.code, .serverRecordChanged)
        XCTAssertEqual(error.serverRecord?["plan"], .string("tram 28"))
        XCTAssertEqual(error.clientRecord?["plan"], .string("stay home"))
        XCTAssertNotNil(error.ancestorRecord)
        XCTAssertNil(error.ancestorRecord?["plan"])
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(w.day.recordID)["plan"], .string("tram 28"), "bob's edit stands")
        // A stale write by the participant is refused the same way.
        bobs["plan"] = .string("again")
        let fromBob = try w.bc.sharedCloudDatabase.fetchRecord(w.day.recordID)
        fromBob["plan"] = .string("latest")
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [fromBob]).error)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.modifyRecords(saving: [bobs]).firstError?.code, .serverRecordChanged)
    }

    func testR21ANewRecordWithAnExistingIDIsRefused() throws {
        let w = try World()
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip])
        let impostor = Record(recordType: "Trip", recordID: w.trip.recordID, fields: ["title": .string("Other")])
        let error = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [impostor]).firstError)
        XCTAssertEqual(error.code, .serverRecordChanged)
        XCTAssertEqual(error.serverRecord?["title"], .string("Lisbon"))
        XCTAssertNil(error.ancestorRecord, "a new record has no ancestor")
        // A second zone share of one zone is the same record name: refused, the first stays.
        let zoneShare = Share(zoneID: w.zone.zoneID)
        zoneShare.addParticipant(try w.participant("bob@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [zoneShare]).error)
        let second = Share(zoneID: w.zone.zoneID)
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [second]).firstError?.code, .serverRecordChanged)
        XCTAssertEqual(try share(w, zoneShare.recordID).participants.count, 2)
    }

    func testR21SavePoliciesChangedKeysAndAllKeys() throws {
        let w = try World()
        w.trip["days"] = .integer(5)
        _ = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip])
        let a = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        let b = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        a["title"] = .string("Porto")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [a]).error)
        b["days"] = .integer(7)
        XCTAssertEqual(b.changedKeys(), ["days"])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [b], savePolicy: .changedKeys).error)
        var now = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        XCTAssertEqual(now["title"], .string("Porto"), "changedKeys keeps the keys this copy did not change")
        XCTAssertEqual(now["days"], .integer(7))
        XCTAssertEqual(b["title"], .string("Porto"), "the saved object shows the server's record (R28)")
        let c = Record(recordType: "Trip", recordID: w.trip.recordID, fields: ["title": .string("Faro")])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [c], savePolicy: .allKeys).error)
        now = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        XCTAssertEqual(
            now.fields,
            ["title": .string("Faro"), "days": .integer(7)],
            "allKeys writes every key the copy holds; one it never held stays (R29)"
        )
    }

    func testR21RemoveThenReAddOfOnePersonInOneSaveKeepsThem() throws {
        let w = try World()
        let s = try w.share(["bob@example.com"])
        let bob = try XCTUnwrap(s.participants.first { $0.role != .owner })
        s.removeParticipant(bob)
        s.addParticipant(try w.participant("bob@example.com", permission: .readWrite))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [s]).error)
        let stored = try share(w, s.recordID)
        XCTAssertEqual(stored.participants.count, 2)
        XCTAssertEqual(stored.participants.first { $0.role != .owner }?.acceptanceStatus, .pending)
        XCTAssertEqual(stored.participants.first { $0.role != .owner }?.permission, .readWrite)
        XCTAssertEqual(s.participants.count, stored.participants.count, "object and store agree")
    }

    func testR11AppliesOnlyWhenThePublicPermissionReallyChanges() throws {
        let w = try World()
        let s = try w.share(["bob@example.com", "carol@example.com"])
        s.title = "same permission"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [s]).error)
        XCTAssertEqual(try share(w, s.recordID).participants.filter { $0.acceptanceStatus == .pending }.count, 2)
    }
}

extension ChangeTagTests: RecordRuleSupport {}
