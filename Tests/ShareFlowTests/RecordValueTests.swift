import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R23: field values keep CloudKit's types exactly; invalid values, keys, types and names are
/// invalidArguments naming what is wrong, and no identifier may hold a NUL byte. Each test is a
/// finding of issue 13.
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
}
