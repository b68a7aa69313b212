import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R31: records carry CloudKit's metadata — creation date (never moves), creator, last
/// modifier (a participant's edit names the participant) — and queries filter and sort on it.
/// R30: the public database is world readable and creator writable.
class RecordMetadataTests: XCTestCase {
    func testCreationStaysAndTheLastModifierIsWhoeverSavedLast() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"], permission: .readWrite)
        _ = share
        let first = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        let created = try XCTUnwrap(first.creationDate)
        XCTAssertEqual(first.creatorUserRecordID?.recordName, w.alice.userRecordID)
        XCTAssertEqual(first.lastModifiedUserRecordID?.recordName, w.alice.userRecordID)
        try w.accept(share.url!, in: w.bc)
        Thread.sleep(forTimeInterval: 0.01)
        let bobsCopy = try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID)
        bobsCopy["title"] = .string("Lisbon, by Bob")
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [bobsCopy]).error)
        XCTAssertEqual(bobsCopy.lastModifiedUserRecordID?.recordName, w.bob.userRecordID, "the saved copy shows the server's metadata")
        let now = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        XCTAssertEqual(now.creationDate, created, "the creation date never moves")
        XCTAssertGreaterThan(try XCTUnwrap(now.modificationDate), created)
        XCTAssertEqual(now.creatorUserRecordID?.recordName, w.alice.userRecordID)
        XCTAssertEqual(now.lastModifiedUserRecordID?.recordName, w.bob.userRecordID, "a participant's edit names the participant")
    }

    func testQueriesFilterAndSortOnTheMetadata() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        var names: [String] = []
        for n in 1...3 {
            let r = Record(recordType: "Note", recordID: RecordID(recordName: "n\(n)", zoneID: w.zone.zoneID), fields: ["n": .integer(Int64(n))])
            XCTAssertNil(try db.modifyRecords(saving: [r]).error)
            names.append("n\(n)")
            Thread.sleep(forTimeInterval: 0.005)
        }
        /// The names of the Notes of Alice's zone where `format` holds of `value`.
        func notes(where format: String, _ value: String) throws -> [String] {
            let query = Query(recordType: "Note", predicate: try Predicate(format: format, arguments: [.string(value)]))
            return try db.records(matching: query, inZoneWith: w.zone.zoneID).records.map(\.recordID.recordName)
        }
        let byCreation = try db.records(
            matching: Query(
                recordType: "Note",
                sortDescriptors: [SortDescriptor(key: "creationDate", ascending: false)]
            ),
            inZoneWith: w.zone.zoneID
        )
        XCTAssertEqual(byCreation.records.map(\.recordID.recordName), names.reversed())
        XCTAssertEqual(try notes(where: "creatorUserRecordID == %@", w.alice.userRecordID).count, 3)
        XCTAssertEqual(try notes(where: "lastModifiedUserRecordID == %@", w.bob.userRecordID).count, 0)
        XCTAssertEqual(try notes(where: "recordID == %@", "n2"), ["n2"])
        // Given as record IDs, as CloudKit takes them (`recordID == %@` with a CKRecord.ID), and
        // as clients send them over HTTP (references): the same records.
        func notes(where format: String, id: RecordID) throws -> [String] {
            let query = Query(recordType: "Note", predicate: try Predicate(format: format, arguments: [.reference(id, action: .none)]))
            return try db.records(matching: query, inZoneWith: w.zone.zoneID).records.map(\.recordID.recordName)
        }
        XCTAssertEqual(try notes(where: "recordID == %@", id: RecordID(recordName: "n2", zoneID: w.zone.zoneID)), ["n2"])
        XCTAssertEqual(try notes(where: "recordName != %@", id: RecordID(recordName: "n2", zoneID: w.zone.zoneID)), ["n1", "n3"])
        XCTAssertEqual(try notes(where: "creatorUserRecordID == %@", id: RecordID(recordName: w.alice.userRecordID, zoneID: .default)).count, 3)
        // Another user's records, by their creator: Bob finds Alice's notices in the public database.
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [Record(recordType: "Notice", recordName: "hello")]).error)
        let byAlice = Query(
            recordType: "Notice",
            predicate: try Predicate(
                format: "creatorUserRecordID == %@",
                arguments: [.reference(RecordID(recordName: w.alice.userRecordID, zoneID: .default), action: .none)]
            )
        )
        XCTAssertEqual(try w.bc.publicCloudDatabase.records(matching: byAlice).records.map(\.recordID.recordName), ["hello"])
    }

    func testThePublicDatabaseIsWorldReadableAndCreatorWritable() throws {
        let w = try World()
        let notice = Record(recordType: "Notice", recordName: "welcome", fields: ["text": .string("hello")])
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [notice]).error)
        // Bob reads it, but neither overwrites (under any policy) nor deletes it.
        let bobsCopy = try w.bc.publicCloudDatabase.fetchRecord(notice.recordID)
        XCTAssertEqual(bobsCopy["text"], .string("hello"))
        XCTAssertEqual(bobsCopy.creatorUserRecordID?.recordName, w.alice.userRecordID)
        for policy in RecordSavePolicy.allCases {
            let copy = try w.bc.publicCloudDatabase.fetchRecord(notice.recordID)
            copy["text"] = .string("defaced")
            let error = try w.bc.publicCloudDatabase.modifyRecords(saving: [copy], savePolicy: policy).firstError
            XCTAssertEqual(error?.code, .permissionFailure, "\(policy)")
            XCTAssertTrue(error?.message.contains("R30") == true, error?.message ?? "")
        }
        let impostor = Record(recordType: "Notice", recordName: "welcome", fields: ["text": .string("mine now")])
        XCTAssertEqual(
            try w.bc.publicCloudDatabase.modifyRecords(saving: [impostor], savePolicy: .allKeys).firstError?.code,
            .permissionFailure
        )
        XCTAssertEqual(try w.bc.publicCloudDatabase.modifyRecords(deleting: [notice.recordID]).firstError?.code, .permissionFailure)
        XCTAssertEqual(try w.c.publicCloudDatabase.fetchRecord(notice.recordID)["text"], .string("hello"))
        // Bob makes his own; Alice, its creator, changes and deletes hers.
        XCTAssertNil(try w.bc.publicCloudDatabase.modifyRecords(saving: [Record(recordType: "Notice", recordName: "bobs")]).error)
        let alicesCopy = try w.c.publicCloudDatabase.fetchRecord(notice.recordID)
        alicesCopy["text"] = .string("hello again")
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [alicesCopy]).error)
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(deleting: [notice.recordID]).error)
    }
}
