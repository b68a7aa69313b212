import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// Records never lose data: R21 (change tags, save policies), R22 (atomic calls, limits), R25
/// (parents), R26 (administrators). Each test is a finding of issue 13 that failed on main
/// before it; the Lua side is Tests/lua/records_test.lua.
class RecordSemanticsTests: XCTestCase {
    private func share(_ w: World, _ id: RecordID) throws -> Share {
        try XCTUnwrap(w.c.privateCloudDatabase.fetchRecord(id) as? Share)
    }

    // MARK: R21

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

    // MARK: R22

    func testR22AFailingShareLeavesItsRootUnsaved() throws {
        var options = Engine.Options()
        options.maxParticipants = 2
        let w = try World(engine: Engine(store: TestStore.make(), options: options))
        let s = Share(rootRecord: w.trip)
        s.addParticipant(try w.participant("bob@example.com"))
        s.addParticipant(try w.participant("carol@example.com"))
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day, s])
        XCTAssertEqual(result.error(for: s)?.code, .tooManyParticipants)
        XCTAssertEqual(result.error(for: w.trip)?.code, .batchRequestFailed)
        XCTAssertEqual(result.error(for: w.trip)?.codeNumber, 22)
        XCTAssertEqual(result.error(for: w.day)?.code, .batchRequestFailed)
        XCTAssertTrue(result.saved.isEmpty)
        XCTAssertNil(w.trip.recordChangeTag, "nothing committed, nothing stamped")
        XCTAssertThrowsError(try w.c.privateCloudDatabase.fetchRecord(w.trip.recordID))
        // Not atomic: each item on its own.
        let loose = try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, w.day, s], atomically: false)
        XCTAssertEqual(loose.saved.count, 2)
        XCTAssertEqual(loose.firstError?.code, .tooManyParticipants)
    }

    func testR22TheDefaultZoneIsNotAtomic() throws {
        let w = try World()
        let zone = RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)
        let good = Record(recordType: "Note", recordID: RecordID(recordName: "good", zoneID: zone))
        let orphan = Record(
            recordType: "Note",
            recordID: RecordID(recordName: "orphan", zoneID: zone),
            parent: RecordID(recordName: "missing", zoneID: zone)
        )
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [good, orphan])
        XCTAssertEqual(result.saved.map(\.recordID.recordName), ["good"])
        XCTAssertEqual(result.firstError?.code, .referenceViolation)
    }

    func testR22Limits() throws {
        let w = try World()
        let many = (0...400).map { Record(recordType: "N", recordID: RecordID(recordName: "n\($0)", zoneID: w.zone.zoneID)) }
        XCTAssertThrowsError(try w.c.privateCloudDatabase.modifyRecords(saving: many)) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .limitExceeded)
            XCTAssertEqual((e as? ShareFlowError)?.codeNumber, 27)
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: Array(many.prefix(400))).error)
        let big = Record(
            recordType: "N",
            recordID: RecordID(recordName: "big", zoneID: w.zone.zoneID),
            fields: ["blob": .string(String(repeating: "x", count: 1_000_001))]
        )
        let error = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [big]).firstError)
        XCTAssertEqual(error.code, .limitExceeded)
        XCTAssertTrue(error.message.contains("big"), error.message)
    }

    // MARK: R25

    func testR25ParentsMustExistAndNeverCycle() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let orphan = Record(
            recordType: "Day",
            recordID: RecordID(recordName: "orphan", zoneID: w.zone.zoneID),
            parent: RecordID(recordName: "nowhere", zoneID: w.zone.zoneID)
        )
        var error = try XCTUnwrap(try db.modifyRecords(saving: [orphan]).firstError)
        XCTAssertEqual(error.code, .referenceViolation)
        XCTAssertEqual(error.codeNumber, 31)
        // A child listed before its parent in one call is fine.
        XCTAssertNil(try db.modifyRecords(saving: [w.day, w.trip]).error)
        // trip under day (day's parent is trip): a cycle.
        let trip = try db.fetchRecord(w.trip.recordID)
        trip.parent = w.day.recordID
        error = try XCTUnwrap(try db.modifyRecords(saving: [trip]).firstError)
        XCTAssertEqual(error.code, .referenceViolation)
        XCTAssertTrue(error.message.contains("cycle"), error.message)
        trip.parent = trip.recordID
        XCTAssertEqual(try db.modifyRecords(saving: [trip]).firstError?.code, .referenceViolation)
        // Another zone.
        let other = try db.saveZone("Other")
        trip.parent = RecordID(recordName: "x", zoneID: other.zoneID)
        XCTAssertEqual(try db.modifyRecords(saving: [trip]).firstError?.code, .referenceViolation)
    }

    // MARK: R26

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

    // MARK: A busy store

    func testABusyStoreIsServiceUnavailableWithRetryAfterAndThePathButNoSQL() throws {
        let dir = try makeTemporaryFolder("busy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("store.sqlite").path
        let w = try World(engine: Engine(store: Store(path: path, busyTimeout: 0.2)))
        let blocker = try DatabaseQueue(path: path)
        try blocker.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            defer { try? db.execute(sql: "ROLLBACK") }
            XCTAssertThrowsError(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip])) { e in
                let error = e as! ShareFlowError
                XCTAssertEqual(error.code, .serviceUnavailable)
                XCTAssertEqual(error.retryAfter, 1)
                XCTAssertTrue(error.message.contains(path), error.message)
                XCTAssertTrue(error.message.contains("busy"), error.message)
                XCTAssertFalse(error.message.contains("BEGIN"), error.message)
                XCTAssertFalse(error.message.contains("SQLite error"), error.message)
            }
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip]).error, "served again once free")
    }
}

/// R23 (values and names), R24 (default zone), R27 (zone privacy, equal work), R28 (fresh
/// objects): each a finding of issue 13.
class RecordValueTests: XCTestCase {
    func testR23EveryValueTypeIsKeptExactly() throws {
        let w = try World()
        let bytes = Data([0, 255, 0xC3, 0x28, 10, 0])
        let values: [String: FieldValue] = [
            "s": .string("Lisbon \u{1F30A}"), "i": .integer(.min), "d": .double(-0.5), "b": .boolean(false),
            "y": .bytes(bytes), "t": .date(Date(timeIntervalSince1970: 1_790_000_000.25)),
            "l": .location(Location(latitude: 38.7223, longitude: -9.1393)),
            "r": .reference(w.trip.recordID, action: .deleteSelf),
            "ls": .list([.string("a"), .string("b")]), "le": .list([]),
            "ly": .list([.bytes(Data([1])), .bytes(Data())]),
        ]
        let record = Record(recordType: "Everything", recordID: RecordID(recordName: "all", zoneID: w.zone.zoneID), fields: values)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [w.trip, record]).error)
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(record.recordID).fields, values)
    }

    func testR23InvalidValuesAndNamesAreInvalidArgumentsNamingTheField() throws {
        let w = try World()
        func refused(
            _ fields: [String: FieldValue],
            type: String = "Note",
            name: String = "n",
            _ expected: String,
            file: StaticString = #filePath,
            line: UInt = #line
        ) throws {
            let r = Record(recordType: type, recordID: RecordID(recordName: name, zoneID: w.zone.zoneID), fields: fields)
            let e = try XCTUnwrap(try w.c.privateCloudDatabase.modifyRecords(saving: [r]).firstError, file: file, line: line)
            XCTAssertEqual(e.code, .invalidArguments, e.message, file: file, line: line)
            XCTAssertTrue(e.message.contains(expected), e.message, file: file, line: line)
        }
        try refused(["x": .double(.nan)], "field 'x'")
        try refused(["x": .double(.infinity)], "field 'x'")
        try refused(["x": .list([.integer(1), .string("a")])], "field 'x' mixes integer and string")
        try refused(["x": .list([.list([])])], "list of lists")
        try refused(["x": .location(Location(latitude: 91, longitude: 0))], "latitude")
        try refused(["x": .date(Date(timeIntervalSince1970: .nan))], "field 'x'")
        try refused(["2nd": .integer(1)], "field key '2nd'")
        try refused(["a b": .integer(1)], "field key 'a b'")
        try refused([:], type: "Not a type", "record type")
        try refused([:], name: "", "empty record name")
        try refused([:], name: String(repeating: "n", count: 256), "at most 255")
        try refused([:], name: "caf\u{E9}", "printable ASCII")
        try refused([:], name: "a\u{0}b", "printable ASCII")
        XCTAssertNil(
            try w.c.privateCloudDatabase.modifyRecords(saving: [
                Record(
                    recordType: "T",
                    recordID: RecordID(
                        recordName: String(repeating: "n", count: 255),
                        zoneID: w.zone.zoneID
                    )
                )
            ]).error,
            "255 is fine"
        )
    }

    /// `accounts.create{ email = "mallory@example.com\0.evil.org" }` created mallory@example.com.
    func testR23NULIsRefusedInEveryIdentifier() throws {
        let w = try World()
        let evil = "mallory@example.com\u{0}.evil.org"
        XCTAssertThrowsError(try w.engine.accounts.create(emails: [evil])) { e in
            XCTAssertEqual((e as? ShareFlowError)?.code, .invalidArguments)
            XCTAssertTrue((e as? ShareFlowError)?.message.contains("NUL") ?? false)
        }
        XCTAssertNil(try w.engine.accounts.find("mallory@example.com"))
        XCTAssertThrowsError(try w.engine.accounts.find("alice@example.com\u{0}x.y"))
        XCTAssertThrowsError(try w.engine.accounts.find("_abc\u{0}"))
        XCTAssertThrowsError(try w.engine.session(for: w.alice).container("iCloud.a\u{0}b"))
        XCTAssertThrowsError(try w.c.privateCloudDatabase.saveZone("Z\u{0}Y"))
        let (found, _) = w.c.fetchShareParticipantResults([LookupRequest(emailAddress: "alice@example.com\u{0}.x.y")])
        XCTAssertThrowsError(try found[0].1.get())
    }

    func testR24ARecordWithoutAZoneGoesToTheDefaultZone() throws {
        let w = try World()
        let note = Record(recordType: "Note", recordName: "n1", fields: ["t": .string("hi")])
        XCTAssertEqual(note.recordID.zoneID, .default)
        let result = try w.c.privateCloudDatabase.modifyRecords(saving: [note])
        XCTAssertNil(result.error)
        XCTAssertEqual(
            result.saved.first?.recordID.zoneID,
            RecordZoneID(zoneName: RecordZoneID.defaultZoneName, ownerName: w.alice.userRecordID)
        )
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchRecord(note.recordID)["t"], .string("hi"))
        let pub = Record(recordType: "Note", recordName: "p1")
        XCTAssertNil(try w.c.publicCloudDatabase.modifyRecords(saving: [pub]).error)
        XCTAssertEqual(try w.bc.publicCloudDatabase.fetchRecord(pub.recordID).recordType, "Note")
    }

    /// A default zone read before anything was saved in it is empty: reading it made the zone,
    /// a write inside a read, and the public database answered serviceUnavailable ("read-only").
    func testR24AnUntouchedDefaultZoneReadsEmpty() throws {
        let w = try World()
        for db in [w.c.publicCloudDatabase, w.c.privateCloudDatabase] {
            XCTAssertThrowsError(try db.fetchRecord(RecordID(recordName: "nope", zoneID: .default))) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .unknownItem, "\(db.databaseScope): \(error)")
            }
            let page = try db.records(
                matching: Query(recordType: "Note", predicate: .all, sortDescriptors: []),
                inZoneWith: nil,
                desiredKeys: nil,
                resultsLimit: nil,
                after: nil
            )
            XCTAssertEqual(page.records.count, 0)
        }
    }

    /// A stranger got unknownItem or permissionFailure for another user's existing zone, but
    /// zoneNotFound for a missing one.
    func testR27AZoneNotSharedWithTheCallerAnswersAsAMissingOne() throws {
        let w = try World()
        _ = try w.share(["bob@example.com"])
        let missing = RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: "Nope", ownerName: w.alice.userRecordID))
        let nobody = RecordID(recordName: "lisbon", zoneID: RecordZoneID(zoneName: "Trips", ownerName: "_" + String(repeating: "0", count: 32)))
        func answer(_ id: RecordID) -> String {
            do {
                _ = try w.cc.sharedCloudDatabase.fetchRecord(id)
                return "found"
            } catch {
                let e = error as! ShareFlowError
                return "\(e.code): " + e.message.replacingOccurrences(of: id.zoneID.description, with: "ZONE")
            }
        }
        let existing = answer(w.trip.recordID)
        XCTAssertTrue(existing.hasPrefix("zoneNotFound"), existing)
        XCTAssertEqual(existing, answer(missing))
        XCTAssertEqual(existing, answer(nobody))
        let save = Record(recordType: "Trip", recordID: w.trip.recordID)
        XCTAssertEqual(try w.cc.sharedCloudDatabase.modifyRecords(saving: [save]).firstError?.code, .zoneNotFound)
        XCTAssertEqual(try w.cc.sharedCloudDatabase.modifyRecords(deleting: [w.trip.recordID]).firstError?.code, .zoneNotFound)
    }

    /// FetchShareMetadata by a stranger took measurably longer for a live private URL than for
    /// a made-up one: now both run the same one statement.
    func testR27MetadataForAStrangerDoesTheSameWorkForALiveAndAMadeUpURL() throws {
        try XCTSkipIf(TestStore.isPostgres, "counts SQLite's statements through its trace hook")
        let w = try World()
        let s = try w.share(["bob@example.com"])
        final class Statements: @unchecked Sendable { var sql: [String] = [] }
        let statements = Statements()
        w.engine.store.queue.inDatabase { db in db.trace { statements.sql.append($0.description) } }
        func probe(_ url: String) -> (ShareFlowError.Code?, [String]) {
            statements.sql.removeAll()
            let (_, error) = w.cc.fetchShareMetadataResults([url])
            return (error?.partialErrors.first?.error.code, statements.sql)
        }
        let live = probe(s.url!)
        let madeUp = probe("https://shareflow.invalid/share/" + String(repeating: "A", count: 32))
        XCTAssertEqual(live.0, .unknownItem)
        XCTAssertEqual(madeUp.0, .unknownItem)
        XCTAssertEqual(live.1, madeUp.1, "the same statements for both")
    }

    func testR28AccountAndRecordObjectsReflectTheStore() throws {
        let w = try World()
        let alice = try XCTUnwrap(try w.engine.accounts.find("alice@example.com"))
        let renamed = try w.engine.accounts.setName(NameComponents(givenName: "Ally"), of: alice)
        XCTAssertEqual(renamed.name.givenName, "Ally")
        XCTAssertEqual(try w.engine.accounts.find("alice@example.com")?.name.givenName, "Ally")
        XCTAssertEqual(try w.engine.accounts.setDiscoverability(.denied, of: alice).discoverability, .denied)
        XCTAssertEqual(try w.c.session.account.discoverability, .denied)
    }
}
