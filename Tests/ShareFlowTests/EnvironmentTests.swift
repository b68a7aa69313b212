import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// R32: a container's development and production environments are separate data sets; accounts
/// are shared.
class EnvironmentTests: XCTestCase {
    private func production(_ account: Account, _ engine: Engine) throws -> Container {
        try engine.session(for: account).container(World.containerID, environment: .production)
    }

    func testTheDefaultEnvironmentIsDevelopment() throws {
        let w = try World()
        XCTAssertEqual(w.c.environment, .development)
        XCTAssertEqual(w.c.containerID, ContainerID(World.containerID, .development))
        XCTAssertEqual(try production(w.alice, w.engine).environment, .production)
    }

    func testZonesAndRecordsOfOneEnvironmentAreNotFoundInTheOther() throws {
        let w = try World()
        try w.share(["bob@example.com"])
        let live = try production(w.alice, w.engine)
        // The zone is development's only.
        XCTAssertEqual(try live.privateCloudDatabase.fetchAllRecordZones().map(\.zoneID.zoneName), [RecordZoneID.defaultZoneName])
        XCTAssertThrowsError(try live.privateCloudDatabase.fetchRecord(w.trip.recordID)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .zoneNotFound, "\(e)")
        }
        // The same zone and record names in production are other rows, with their own fields.
        try live.privateCloudDatabase.saveZone("Trips")
        let other = Record(recordType: "Trip", recordID: w.trip.recordID, fields: ["title": .string("Porto")])
        XCTAssertNil(try live.privateCloudDatabase.modifyRecords(saving: [other]).error)
        XCTAssertEqual(try live.privateCloudDatabase.fetchRecord(w.trip.recordID)["title"], .string("Porto"))
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)["title"], .string("Lisbon"))
        // Deleting production's zone leaves development's.
        XCTAssertNil(try live.privateCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).error)
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)["title"], .string("Lisbon"))
    }

    func testPublicDatabasesAreSeparate() throws {
        let w = try World()
        let note = Record(recordType: "Note", recordName: "n1", fields: ["text": .string("dev")])
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [note]).error)
        let live = try production(w.bob, w.engine)
        XCTAssertThrowsError(try live.publicCloudDatabase.fetchRecord(note.recordID)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .unknownItem, "\(e)")
        }
        // Bob may create his own n1 in production: Alice's is not there to own the name.
        let his = Record(recordType: "Note", recordName: "n1", fields: ["text": .string("live")])
        XCTAssertNil(try live.publicCloudDatabase.modifyRecords(saving: [his]).error)
        XCTAssertEqual(try w.bc.publicCloudDatabase.fetchRecord(note.recordID)["text"], .string("dev"))
        XCTAssertEqual(
            try w.cc.session.container(World.containerID, environment: .production)
                .publicCloudDatabase.fetchRecord(note.recordID)["text"],
            .string("live")
        )
    }

    func testAShareURLOfOneEnvironmentIsNotFoundInTheOther() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let url = try XCTUnwrap(share.url)
        let bobLive = try production(w.bob, w.engine)
        let (metas, error) = bobLive.fetchShareMetadataResults([url])
        XCTAssertNotNil(error)
        XCTAssertEqual(metas.first.map { (try? $0.1.get()) == nil }, true)
        let code = error?.partialErrors.first?.error.code
        XCTAssertEqual(code, .unknownItem, "a development URL answers in production as one that does not exist")
        // A made-up URL gives the same answer.
        let (_, madeUp) = bobLive.fetchShareMetadataResults([w.engine.shareURL(token: "NoSuchToken")])
        XCTAssertEqual(madeUp?.partialErrors.first?.error.code, code)
        // Metadata fetched in development cannot be accepted in production.
        let (devMetas, devError) = w.bc.fetchShareMetadataResults([url])
        XCTAssertNil(devError)
        let meta = try devMetas[0].1.get()
        XCTAssertEqual(meta.environment, .development)
        let (_, acceptError) = bobLive.acceptShareResults([meta])
        XCTAssertEqual(acceptError?.partialErrors.first?.error.code, .invalidArguments)
        let message = acceptError?.partialErrors.first?.error.message ?? ""
        XCTAssertTrue(message.contains("production"), message)
        // Accepted in development, the shared zone is development's only.
        try w.accept(url, in: w.bc)
        XCTAssertEqual(try w.bc.sharedCloudDatabase.fetchAllRecordZones().count, 1)
        XCTAssertEqual(try bobLive.sharedCloudDatabase.fetchAllRecordZones().count, 0)
        XCTAssertThrowsError(try bobLive.sharedCloudDatabase.fetchRecord(w.trip.recordID)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .zoneNotFound, "\(e)")
        }
    }

    func testAuditsNameTheEnvironment() throws {
        let w = try World()
        try w.share(["bob@example.com"])
        let live = try production(w.alice, w.engine)
        try live.privateCloudDatabase.saveZone("Trips")
        let trip = Record(recordType: "Trip", recordID: w.trip.recordID)
        let share = Share(rootRecord: trip)
        XCTAssertNil(try live.privateCloudDatabase.modifyRecords(saving: [trip, share]).error)
        let audits = try w.engine.auditShares(owner: "alice@example.com")
        XCTAssertEqual(audits.map(\.environment).sorted { $0.rawValue < $1.rawValue }, [.development, .production])
    }

    func testAQueryCursorStaysInItsEnvironment() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        for i in 0..<3 {
            XCTAssertNil(
                try db.modifyRecords(saving: [Record(recordType: "Item", recordID: RecordID(recordName: "i\(i)", zoneID: w.zone.zoneID))]).error
            )
        }
        let (_, cursor) = try db.records(matching: Query(recordType: "Item"), inZoneWith: w.zone.zoneID, resultsLimit: 1)
        let live = try production(w.alice, w.engine).privateCloudDatabase
        XCTAssertThrowsError(try live.records(continuingMatchFrom: XCTUnwrap(cursor))) { e in
            XCTAssertTrue("\(e)".contains("development"), "\(e)")
        }
    }

    func testAnUnknownEnvironmentIsRefusedByName() {
        XCTAssertThrowsError(try CloudEnvironment(named: "staging")) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .invalidArguments)
            XCTAssertTrue("\(e)".contains("'staging' is not development or production"), "\(e)")
        }
    }

    /// v6 (R32): a v5 store's zones, records and shares are development's; its API tokens open
    /// development only; nothing else moves.
    func testAV5StoreKeepsItsDataInDevelopment() throws {
        let (dir, path) = try makeOldStore(
            upTo: "v5",
            migrator: Store.migrator(),
            sql: """
                INSERT INTO account (id, userRecordID, discoverability, createdAt) VALUES (1, '_owner', 'granted', 0);
                INSERT INTO account_email VALUES ('owner@example.com', 1, 0);
                INSERT INTO zone (id, container, scope, ownerID, name) VALUES (7, 'iCloud.t', 'private', 1, 'Z');
                INSERT INTO record (id, zoneID, name, type, fields, changeTag, createdBy, modifiedBy, modifiedAt, tag, createdAt)
                    VALUES (1, 7, 'doc', 'Doc', '{}', 1, 1, 1, 1234.5, 'aaaa', 1000);
                INSERT INTO credential (kind, container, hash, createdAt) VALUES ('apiToken', 'iCloud.t', 'h1', 0);
                """
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: path)
        let engine = Engine(store: store)
        let owner = try XCTUnwrap(try engine.accounts.find("owner@example.com"))
        let dev = try engine.session(for: owner).container("iCloud.t")
        let zoneID = RecordZoneID(zoneName: "Z", ownerName: "_owner")
        let doc = try dev.privateCloudDatabase.fetchRecord(RecordID(recordName: "doc", zoneID: zoneID))
        XCTAssertEqual(doc.recordChangeTag, "aaaa", "migrating changes no change tag")
        XCTAssertEqual(
            try engine.session(for: owner).container("iCloud.t", environment: .production)
                .privateCloudDatabase.fetchAllRecordZones().count,
            1,
            "production has the default zone only"
        )
        XCTAssertNotNil(try store.credential(.apiToken, container: "iCloud.t", environment: .development, hash: "h1"))
        XCTAssertNil(try store.credential(.apiToken, container: "iCloud.t", environment: .production, hash: "h1"))
        let check = try store.check()
        XCTAssertEqual(check.problems, [])
        XCTAssertEqual(check.integrity, ["ok"])
    }
}
