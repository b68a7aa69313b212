import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R29: a save never deletes a key the saved object did not hold. A copy fetched with
/// `desiredKeys` (FetchRecords, queries, `rootRecordDesiredKeys`) and saved back — edited or
/// not, under any policy — keeps the keys it never fetched; a key is deleted only by setting it
/// to nil on the copy.
class PartialSaveTests: XCTestCase {
    /// Alice's trip with three keys, saved.
    func world() throws -> (World, Record) {
        let w = try World()
        w.trip["notes"] = .string("bring sunscreen")
        w.trip["days"] = .integer(4)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).error)
        return (w, w.trip)
    }

    func fetch(_ w: World, _ id: RecordID, keys: [String]?, in container: Container? = nil) throws -> Record {
        let op = FetchRecordsOperation(recordIDs: [id])
        op.desiredKeys = keys
        var fetched: Record?
        op.perRecordResultBlock = { _, r in fetched = try? r.get() }
        let c = container ?? w.c
        op.database = c.privateCloudDatabase
        c.add(op)
        op.waitUntilFinished()
        return try XCTUnwrap(fetched)
    }

    func stored(_ w: World, _ id: RecordID) throws -> [String: FieldValue] {
        try w.c.privateCloudDatabase.fetchRecord(id).fields
    }

    func testAPartialCopySavedBackUnchangedKeepsEveryKey() throws {
        for policy in RecordSavePolicy.allCases {
            let (w, trip) = try world()
            let copy = try fetch(w, trip.recordID, keys: ["title"])
            XCTAssertEqual(copy.fields.keys.sorted(), ["title"])
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [copy], savePolicy: policy).error, "\(policy)")
            XCTAssertEqual(
                try stored(w, trip.recordID),
                ["title": .string("Lisbon"), "notes": .string("bring sunscreen"), "days": .integer(4)],
                "\(policy)"
            )
        }
    }

    func testAPartialCopyWritesItsEditsAndKeepsTheRest() throws {
        for policy in RecordSavePolicy.allCases {
            let (w, trip) = try world()
            let copy = try fetch(w, trip.recordID, keys: ["title", "days"])
            copy["title"] = .string("Lisbon & Porto")
            copy["days"] = nil  // deleted: it was fetched and set to nil
            XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [copy], savePolicy: policy).error, "\(policy)")
            XCTAssertEqual(
                try stored(w, trip.recordID),
                ["title": .string("Lisbon & Porto"), "notes": .string("bring sunscreen")],
                "\(policy)"
            )
        }
    }

    /// Under ifServerRecordUnchanged and changedKeys a full copy writes only what it changed,
    /// so another key written meanwhile by changedKeys survives; allKeys writes all it holds.
    func testOnlyChangedKeysAreWrittenUnlessAllKeys() throws {
        let (w, trip) = try world()
        let mine = try fetch(w, trip.recordID, keys: nil)
        let theirs = try fetch(w, trip.recordID, keys: nil)
        theirs["notes"] = .string("hat")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [theirs], savePolicy: .changedKeys).error)
        mine["title"] = .string("Porto")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [mine], savePolicy: .changedKeys).error)
        XCTAssertEqual(try stored(w, trip.recordID)["notes"], .string("hat"))
        XCTAssertEqual(try stored(w, trip.recordID)["title"], .string("Porto"))
        let old = try fetch(w, trip.recordID, keys: nil)
        old["notes"] = .string("old copy")
        let other = try fetch(w, trip.recordID, keys: nil)
        other["days"] = .integer(9)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [other], savePolicy: .changedKeys).error)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [old], savePolicy: .allKeys).error)
        // allKeys wrote every key the old copy held, days included (its 4 over the 9).
        XCTAssertEqual(try stored(w, trip.recordID), ["title": .string("Porto"), "notes": .string("old copy"), "days": .integer(4)])
    }

    /// The canonical participant flow: accept with rootRecordDesiredKeys, edit the metadata's
    /// root record, save it — the root's other fields stay, for everyone.
    func testAParticipantSavingThePartialRootOfTheMetadataKeepsItsOtherFields() throws {
        let (w, trip) = try world()
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        let op = FetchShareMetadataOperation(shareURLs: [share.url!])
        op.shouldFetchRootRecord = true
        op.rootRecordDesiredKeys = ["title"]
        var metadata: ShareMetadata?
        op.perShareMetadataResultBlock = { _, r in metadata = try? r.get() }
        w.bc.add(op)
        op.waitUntilFinished()
        let m = try XCTUnwrap(metadata)
        XCTAssertNoThrow(try w.accept(share.url!, in: w.bc))
        let root = try XCTUnwrap(m.rootRecord)
        XCTAssertEqual(root.fields.keys.sorted(), ["title"])
        root["title"] = .string("Lisbon (Bob's edit)")
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [root]).error)
        XCTAssertEqual(
            try stored(w, trip.recordID),
            ["title": .string("Lisbon (Bob's edit)"), "notes": .string("bring sunscreen"), "days": .integer(4)]
        )
    }
}
