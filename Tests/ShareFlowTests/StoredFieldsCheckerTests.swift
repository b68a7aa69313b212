import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// The check that lets a feed page keep a record's fields undecoded (`StoredFieldsChecker`):
/// it passes only bytes the reader reads (so a record's fields, decoded later, are never lost
/// to a damaged row), and a record so made behaves as one decoded at once.
class StoredFieldsCheckerTests: XCTestCase {
    private func checks(_ json: String) -> Bool {
        Array(json.utf8).withUnsafeBufferPointer { StoredFieldsChecker.readable($0) }
    }

    private func read(_ json: String) -> [String: FieldValue]? {
        Array(json.utf8).withUnsafeBufferPointer { StoredFieldsReader.read($0) }
    }

    /// Wherever the checker says yes, the reader reads it; and it says yes to the common forms.
    func testTheCheckPassesOnlyWhatTheReaderReads() throws {
        let passes = [
            "{}", "{\"title\":{\"s\":\"Lisbon\"}}", "{\"n\":{\"i\":-9223372036854775808},\"m\":{\"i\":9223372036854775807}}",
            "{\"a\":{\"b\":true},\"b\":{\"b\":false}}", "{\"when\":{\"t\":1790000000.5},\"d\":{\"d\":-1e-300}}",
            "{\"body\":{\"s\":\"\(String(repeating: "x", count: 100))\"},\"t\":{\"s\":\"é 😀 bytes past eight\"}}",
            "{\"bad utf8\":{\"s\":\"\u{FFFD}\"}}", "{\"a\":{\"s\":\"\"}}", "{\"\":{\"i\":0}}",
        ]
        for json in passes {
            XCTAssertTrue(checks(json), json)
            XCTAssertNotNil(read(json), json)
        }
        let refused = [
            "", " {}", "{} ", "{ }", "[]", "null", "{\"a\":{\"s\":\"x\"},\"a\":{\"s\":\"y\"}}", "{\"a\":{\"s\":\"x\",\"i\":1}}",
            "{\"a\":{\"i\":1.0}}", "{\"a\":{\"i\":01}}", "{\"a\":{\"i\":9223372036854775808}}", "{\"a\":{\"i\":-9223372036854775809}}",
            "{\"a\":{\"d\":1e400}}", "{\"a\":{\"d\":.5}}", "{\"a\":{\"d\":1.}}", "{\"a\":{\"d\":NaN}}", "{\"a\":{\"b\":1}}",
            "{\"a\":{\"y\":\"***\"}}", "{\"a\":{\"s\":\"\\ud800\"}}", "{\"a\":{\"s\":\"tab\there\"}}", "{\"a\":{\"s\":\"unterminated}}",
            "{\"a\":{\"s\":\"x\"}", "{\"a\":{\"s\":\"x\"}}}", "{\"a\":{\"s\":\"x\"},}", "{\"a\":{\"s\":\"quote \\\" inside\"}}",
            "{\"é\":{\"s\":\"x\"}}", "{\"a\\u0062\":{\"s\":\"x\"},\"ab\":{\"s\":\"y\"}}",
            "{" + (0...StoredFieldsChecker.maxFields).map { "\"f\($0)\":{\"i\":\($0)}" }.joined(separator: ",") + "}",
        ]
        for json in refused { XCTAssertFalse(checks(json), json) }
        // Control characters anywhere in an 8-byte run are seen, at every offset.
        for offset in 0..<17 {
            let text = String(repeating: "a", count: offset) + "\u{1}" + String(repeating: "b", count: 9)
            XCTAssertFalse(checks("{\"a\":{\"s\":\"\(text)\"}}"), "control character at \(offset)")
            XCTAssertNil(read("{\"a\":{\"s\":\"\(text)\"}}"))
            let slash = String(repeating: "a", count: offset) + "\\\\" + String(repeating: "b", count: 9)
            XCTAssertFalse(checks("{\"a\":{\"s\":\"\(slash)\"}}"), "escape at \(offset)")
        }
    }

    /// Random fields as the store writes them, and each one cut or with a byte changed: the
    /// checker never passes what the reader refuses.
    func testRandomAndDamagedFieldsNeverPassWhatTheReaderRefuses() throws {
        var generator = SystemRandomNumberGenerator()
        var passed = 0
        for _ in 0..<400 {
            var fields: [String: FieldValue] = [:]
            for n in 0..<Int.random(in: 0...6, using: &generator) {
                switch Int.random(in: 0...5, using: &generator) {
                case 0: fields["f\(n)"] = .string(String(repeating: "ab\u{E9}", count: Int.random(in: 0...20, using: &generator)))
                case 1: fields["f\(n)"] = .integer(Int64.random(in: .min ... .max, using: &generator))
                case 2: fields["f\(n)"] = .double(Double.random(in: -1e300...1e300, using: &generator))
                case 3: fields["f\(n)"] = .boolean(Bool.random(using: &generator))
                case 4: fields["f\(n)"] = .date(Date(timeIntervalSince1970: Double.random(in: -1e10...1e10, using: &generator)))
                default: fields["f\(n)"] = .string("line\nbreak")
                }
            }
            let json = Array(try StoredFields(fields).json.utf8)
            var variants = [json]
            if !json.isEmpty {
                variants.append(Array(json.prefix(Int.random(in: 0..<json.count, using: &generator))))
                var changed = json
                changed[Int.random(in: 0..<json.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                variants.append(changed)
            }
            for bytes in variants {
                let ok = bytes.withUnsafeBufferPointer { StoredFieldsChecker.readable($0) }
                let fields = bytes.withUnsafeBufferPointer { StoredFieldsReader.read($0) }
                if ok {
                    passed += 1
                    XCTAssertNotNil(fields, String(decoding: bytes, as: UTF8.self))
                }
            }
        }
        XCTAssertGreaterThan(passed, 200, "most records are kept undecoded")
    }

    /// A record from a feed page, its fields undecoded, behaves as one decoded at once: its
    /// fields, its changed keys, a change then a save with `changedKeys`, a conflict's ancestor.
    func testARecordWithUndecodedFieldsBehavesAsOneDecoded() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = w.zone.zoneID
        let note = Record(
            recordType: "Note",
            recordID: RecordID(recordName: "n", zoneID: zone),
            fields: ["title": .string("one"), "n": .integer(1), "body": .string(String(repeating: "z", count: 50))]
        )
        XCTAssertNil(try db.modifyRecords(saving: [note]).firstError)
        let fed = try XCTUnwrap(try db.recordZoneChanges(zone).modifications.first)
        XCTAssertEqual(fed.changedKeys(), [], "nothing changed yet: the server's copy is the fields")
        XCTAssertEqual(fed["title"], .string("one"))
        fed["title"] = .string("two")
        XCTAssertEqual(fed.changedKeys(), ["title"])
        XCTAssertNil(try db.modifyRecords(saving: [fed], savePolicy: .changedKeys).firstError)
        XCTAssertEqual(
            try db.fetchRecord(note.recordID).fields,
            ["title": .string("two"), "n": .integer(1), "body": .string(String(repeating: "z", count: 50))]
        )
        // A stale copy from the feed, never read, saved: a conflict whose ancestor holds its fields.
        let stale = try XCTUnwrap(try db.recordZoneChanges(zone).modifications.first)
        let fresh = try db.fetchRecord(note.recordID)
        fresh["n"] = .integer(2)
        XCTAssertNil(try db.modifyRecords(saving: [fresh]).firstError)
        stale.fields = ["title": .string("three")]
        XCTAssertEqual(Set(stale.changedKeys()), ["title", "n", "body"], "a whole new set of fields changes every key")
        let result = try db.modifyRecords(saving: [stale], savePolicy: .ifServerRecordUnchanged)
        XCTAssertNotNil(result.firstError)
        // desiredKeys trims what the page holds.
        let trimmed = try XCTUnwrap(try db.recordZoneChanges(zone, desiredKeys: ["n"]).modifications.first)
        XCTAssertEqual(trimmed.fields, ["n": .integer(2)])
    }

    /// A damaged fields column is still named when the page is read, as by every other read.
    func testADamagedFieldsColumnFailsThePageNamingIt() throws {
        let dir = try makeTemporaryFolder("sf-lazy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.sqlite").path
        do {
            let engine = Engine(store: try Store(path: path))
            let account = try engine.accounts.create(emails: ["a@example.com"])
            let db = try engine.session(for: account).container("iCloud.t").privateCloudDatabase
            let zone = try db.saveZone("Z").zoneID
            XCTAssertNil(
                try db.modifyRecords(saving: [
                    Record(
                        recordType: "Note",
                        recordID: RecordID(recordName: "n", zoneID: zone),
                        fields: ["title": .string("x")]
                    )
                ]).firstError
            )
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "UPDATE record SET fields = '{\"title\":{\"s\":\"x\"' WHERE name = 'n'") }
        try queue.close()
        let engine = Engine(store: try Store(path: path))
        let db = try engine.session(for: "a@example.com").container("iCloud.t").privateCloudDatabase
        XCTAssertThrowsError(try db.recordZoneChanges(RecordZoneID(zoneName: "Z", ownerName: RecordZoneID.currentUserName))) { error in
            XCTAssertTrue("\(error)".contains("damaged row: table record"), "\(error)")
            XCTAssertTrue("\(error)".contains("column fields"), "\(error)")
        }
    }
}
