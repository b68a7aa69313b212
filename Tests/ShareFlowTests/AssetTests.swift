import Crypto
import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §19 A2–A4: an asset is saved with its record (its bytes made durable first), fetched as
/// a readable file, reached exactly when its record is (R12, R15, R37), bounded, and never
/// named by a record without its bytes in the store.
class AssetTests: XCTestCase {
    private var files: URL!

    override func setUpWithError() throws {
        files = FileManager.default.temporaryDirectory.appendingPathComponent("sf-asset-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { if let files { try? FileManager.default.removeItem(at: files) } }

    private static func hex(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    private func asset(_ record: Record, _ key: String) throws -> Asset {
        guard case .asset(let a)? = record[key] else { throw XCTSkip("field \(key) holds \(String(describing: record[key]))") }
        return a
    }

    func testAFileAndBytesAreSavedWithTheRecordAndReadBackByteExact() throws {
        let w = try World()
        let photo = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let file = files.appendingPathComponent("photo.jpg")
        try photo.write(to: file)
        w.trip["photo"] = .asset(Asset(fileURL: file))
        w.trip["notes"] = .list([.asset(Asset(data: Data("one".utf8))), .asset(Asset(data: Data()))])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError)
        // The saved object now names the store's copy, as CKAsset after a save.
        let saved = try asset(w.trip, "photo")
        XCTAssertEqual(saved.checksum, Self.hex(photo))
        XCTAssertEqual(saved.size, Int64(photo.count))
        XCTAssertNotEqual(saved.fileURL, file)
        XCTAssertEqual(w.trip.changedKeys(), [])

        let fetched = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        let a = try asset(fetched, "photo")
        XCTAssertEqual(try Data(contentsOf: try XCTUnwrap(a.fileURL)), photo)
        XCTAssertEqual(try a.read(), photo)
        XCTAssertThrowsError(try a.read(maxBytes: 10)) { XCTAssertEqual(($0 as? ShareFlowError)?.code, .limitExceeded) }
        guard case .list(let notes)? = fetched["notes"], notes.count == 2, case .asset(let one) = notes[0], case .asset(let empty) = notes[1] else {
            return XCTFail("notes: \(String(describing: fetched["notes"]))")
        }
        XCTAssertEqual(try one.read(), Data("one".utf8))
        XCTAssertEqual(try empty.read(), Data())
        XCTAssertEqual(fetched.changedKeys(), [])
        // Saved again unchanged: nothing moves; the file given is the caller's, left alone.
        fetched["title"] = .string("Lisbon again")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fetched]).firstError)
        XCTAssertEqual(try Data(contentsOf: file), photo)
    }

    func testAnAssetPastTheLimitIsLimitExceededAndNothingIsSaved() throws {
        let w = try World()
        w.engine.options.assetMaxBytes = 1000
        w.trip["big"] = .asset(Asset(data: Data(count: 1001)))
        let e = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError)
        XCTAssertEqual(e.code, .limitExceeded, e.message)
        XCTAssertThrowsError(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID))
        // A file past it is refused once the bound is passed; a missing file names itself.
        let file = files.appendingPathComponent("big.bin")
        try Data(count: 5000).write(to: file)
        w.trip["big"] = .asset(Asset(fileURL: file))
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError?.code, .limitExceeded)
        w.trip["big"] = .asset(Asset(fileURL: files.appendingPathComponent("missing.bin")))
        let missing = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError)
        XCTAssertEqual(missing.code, .invalidArguments)
        XCTAssertTrue(missing.message.contains("missing.bin"), missing.message)
    }

    func testASharedRecordsAssetIsReadByItsParticipantsAndNoOneElse() throws {
        let w = try World()
        w.trip["photo"] = .asset(Asset(data: Data("sunset".utf8)))
        let share = try w.share(["bob@example.com"])
        try w.accept(try XCTUnwrap(share.url), in: w.bc)
        let bobs = try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID)
        XCTAssertEqual(try asset(bobs, "photo").read(), Data("sunset".utf8))
        XCTAssertThrowsError(try w.cc.sharedCloudDatabase.fetchRecord(w.trip.recordID))
        // A download token names the record as its reader read it: Bob's works while he is in.
        let sum = try XCTUnwrap(try asset(bobs, "photo").checksum)
        let token = try w.engine.assetDownloadToken(
            checksum: sum,
            field: "photo",
            record: w.trip.recordID,
            for: Engine.AssetReader(w.bc.sharedCloudDatabase)
        )
        XCTAssertEqual(try w.engine.assetDownload(token).size, 6)
        // Carol's token for the same record, made by hand, leads nowhere; a changed one neither.
        let carols = try w.engine.assetDownloadToken(
            checksum: sum,
            field: "photo",
            record: w.trip.recordID,
            for: Engine.AssetReader(w.cc.sharedCloudDatabase)
        )
        XCTAssertEqual(try? w.engine.assetDownload(carols).size, nil)
        var altered = Array(token.utf8)
        altered[altered.count / 2] = altered[altered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertThrowsError(try w.engine.assetDownload(String(decoding: altered, as: UTF8.self))) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .unknownItem)
        }
        // Bob removed: his URL stops with his access.
        let current = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        current.removeParticipant(try XCTUnwrap(current.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" }))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [current]).firstError)
        XCTAssertThrowsError(try w.engine.assetDownload(token))
        // An expired URL is gone too.
        w.engine.options.assetURLSeconds = -1
        let expired = try w.engine.assetDownloadToken(
            checksum: sum,
            field: "photo",
            record: w.trip.recordID,
            for: Engine.AssetReader(w.c.privateCloudDatabase)
        )
        XCTAssertThrowsError(try w.engine.assetDownload(expired))
    }

    func testAChecksumAloneAttachesNoBytesAndAStoredAssetMustBeInTheStore() throws {
        let w = try World()
        w.trip["photo"] = .asset(Asset(data: Data("mine".utf8)))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError)
        let sum = try XCTUnwrap(try asset(w.trip, "photo").checksum)
        // Bob names Alice's checksum in his own record: refused, whatever he claims.
        let bobs = Record(recordType: "Note", recordID: RecordID(recordName: "b", zoneID: .default))
        bobs["stolen"] = .asset(Asset(.claimed(checksum: sum, size: 4)))
        let e = try XCTUnwrap(try w.bc.privateCloudDatabase.modifyRecords(saving: [bobs]).firstError)
        XCTAssertEqual(e.code, .invalidArguments)
        // A record sends back what it holds: kept.
        let again = try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID)
        again["photo"] = .asset(Asset(.claimed(checksum: sum, size: nil)))
        again["title"] = .string("x")
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [again]).firstError)
        // Swift copies a saved asset to another record: the bytes are in the store.
        let copy = Record(recordType: "Note", recordID: RecordID(recordName: "copy", zoneID: w.zone.zoneID))
        copy["photo"] = again["photo"]
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [copy]).firstError)
        // A stored asset whose bytes the store lacks is refused.
        let ghost = Record(recordType: "Note", recordID: RecordID(recordName: "ghost", zoneID: w.zone.zoneID))
        ghost["photo"] = .asset(Asset(checksum: String(repeating: "ab", count: 32), size: 3))
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [ghost]).firstError?.code, .invalidArguments)
        // Assets are not indexed: no query matches one.
        let all = try w.c.privateCloudDatabase.records(matching: Query(recordType: "Trip"), inZoneWith: w.zone.zoneID)
        XCTAssertEqual(all.records.count, 1)
        let none = try w.c.privateCloudDatabase.records(
            matching: try Query(recordType: "Trip", predicate: "photo == %@", arguments: [again["photo"]!]),
            inZoneWith: w.zone.zoneID
        )
        XCTAssertEqual(none.records.count, 0)
    }

    func testAReceiptIsRedeemedOnceByItsAccountForItsField() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let slots = try w.engine.reserveAssetUploads([.init(recordName: "lisbon", fieldName: "photo")], zoneName: "Trips", in: db)
        XCTAssertEqual(slots.map(\.recordName), ["lisbon"])
        XCTAssertNotNil(try w.engine.pendingAssetUpload(secret: slots[0].secret))
        let saved = try w.engine.assets.put(Data("uploaded".utf8), maxBytes: 100)
        let receipt = try w.engine.completeAssetUpload(secret: slots[0].secret, saved: saved)
        // The URL is used up.
        XCTAssertNil(try w.engine.pendingAssetUpload(secret: slots[0].secret))
        XCTAssertThrowsError(try w.engine.completeAssetUpload(secret: slots[0].secret, saved: saved))
        // Another account, another field, another record: refused, the receipt kept.
        let bobs = Record(recordType: "Note", recordID: RecordID(recordName: "lisbon", zoneID: .default))
        bobs["photo"] = .asset(Asset(.receipt(receipt)))
        XCTAssertEqual(try w.bc.privateCloudDatabase.modifyRecords(saving: [bobs]).firstError?.code, .invalidArguments)
        w.trip["cover"] = .asset(Asset(.receipt(receipt)))
        let wrongField = try XCTUnwrap(try db.modifyRecords(saving: [w.trip]).firstError)
        XCTAssertTrue(wrongField.message.contains("field 'photo'"), wrongField.message)
        w.trip["cover"] = nil
        w.trip["photo"] = .asset(Asset(.receipt(receipt)))
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
        XCTAssertEqual(try asset(try db.fetchRecord(w.trip.recordID), "photo").read(), Data("uploaded".utf8))
        // Used once.
        let second = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: w.zone.zoneID))
        second["photo"] = .asset(Asset(.receipt(receipt)))
        XCTAssertEqual(try db.modifyRecords(saving: [second], savePolicy: .allKeys).firstError?.code, .invalidArguments)
    }

    func testAnAtomicBatchThatFailsKeepsTheReceiptAndLeavesOnlyAnOrphan() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let slots = try w.engine.reserveAssetUploads([.init(fieldName: "photo")], zoneName: nil, in: db)
        let receipt = try w.engine.completeAssetUpload(
            secret: slots[0].secret,
            saved: try w.engine.assets.put(Data("kept".utf8), maxBytes: 100)
        )
        w.trip["photo"] = .asset(Asset(.receipt(receipt)))
        let bad = Record(recordType: "Trip", recordID: RecordID(recordName: "bad", zoneID: w.zone.zoneID), fields: ["x": .double(.nan)])
        XCTAssertNotNil(try db.modifyRecords(saving: [w.trip, bad], atomically: true).firstError)
        XCTAssertThrowsError(try db.fetchRecord(w.trip.recordID))
        // The receipt was not used by the batch that rolled back.
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
    }

    func testOrphansAreCollectedPastTheGraceAndWhatIsNamedStays() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        w.trip["photo"] = .asset(Asset(data: Data("kept".utf8)))
        w.trip["draft"] = .asset(Asset(data: Data("replaced".utf8)))
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
        let replaced = try XCTUnwrap(try asset(w.trip, "draft").checksum)
        w.trip["draft"] = .asset(Asset(data: Data("final".utf8)))
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
        // An upload whose receipt waits for its save is kept too.
        let slots = try w.engine.reserveAssetUploads([.init(fieldName: "photo")], zoneName: nil, in: db)
        let waiting = try w.engine.assets.put(Data("waiting".utf8), maxBytes: 100)
        _ = try w.engine.completeAssetUpload(secret: slots[0].secret, saved: waiting)
        // Not yet past the grace: nothing goes.
        var done = try w.engine.store.collectOrphanAssets(grace: 3600)
        XCTAssertEqual(done.removed, 0)
        XCTAssertNotNil(try w.engine.assets.size(replaced))
        done = try w.engine.store.collectOrphanAssets(grace: 0, now: EngineClock.seconds + 10)
        XCTAssertEqual(done.removed, 1, "\(done)")
        XCTAssertNil(try w.engine.assets.size(replaced))
        XCTAssertNotNil(try w.engine.assets.size(waiting.checksum))
        let fetched = try db.fetchRecord(w.trip.recordID)
        XCTAssertEqual(try asset(fetched, "photo").read(), Data("kept".utf8))
        XCTAssertEqual(try asset(fetched, "draft").read(), Data("final".utf8))
        XCTAssertTrue(try w.engine.store.check().isHealthy)
        // Once the receipt expires, its bytes go too.
        done = try w.engine.store.collectOrphanAssets(grace: 0, now: EngineClock.seconds + 2 * w.engine.options.assetGraceSeconds)
        XCTAssertEqual(done.removed, 1, "\(done)")
        XCTAssertNil(try w.engine.assets.size(waiting.checksum))
        // A blob lost from under a record is a problem `store check` names.
        let sum = try XCTUnwrap(try asset(fetched, "photo").checksum)
        if let files = w.engine.store.fileAssets {
            files.remove(sum)
        } else {
            try w.engine.store.write(scope: .wholeStore) { try $0.removeAssetBlob(checksum: sum) }
        }
        let check = try w.engine.store.check()
        XCTAssertFalse(check.isHealthy)
        XCTAssertTrue(check.problems.contains { $0.contains("names asset \(sum.prefix(12))") && $0.contains("missing") }, "\(check.problems)")
    }

    func testASharesFieldsHoldNoAsset() throws {
        let w = try World()
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).firstError)
        let share = Share(rootRecord: w.trip)
        share["thumb"] = .asset(Asset(data: Data([1])))
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, share]).firstError?.code, .invalidArguments)
    }
}
