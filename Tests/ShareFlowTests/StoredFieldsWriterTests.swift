import Foundation
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// `StoredFieldsWriter` against `JSONEncoder`, the encoder it stands in for: what it writes
/// decodes to the same fields and is exactly as long (R22 counts a record's stored bytes), and
/// it leaves numbers with fractions to the encoder.
final class StoredFieldsWriterTests: XCTestCase {
    private let zone = RecordZoneID(zoneName: "Trips \"2026\"/é", ownerName: "_owner")

    private func check(_ fields: [String: FieldValue], file: StaticString = #filePath, line: UInt = #line) throws {
        let encoded = String(decoding: try JSONEncoder().encode(fields), as: UTF8.self)
        guard let written = StoredFieldsWriter.write(fields) else {
            return XCTFail("the writer takes \(fields)", file: file, line: line)
        }
        XCTAssertEqual(written.utf8.count, encoded.utf8.count, "\(written)\n\(encoded)", file: file, line: line)
        XCTAssertEqual(try JSONDecoder().decode([String: FieldValue].self, from: Data(written.utf8)), fields, written, file: file, line: line)
        var bytes = Array(written.utf8)
        XCTAssertEqual(
            bytes.withUnsafeMutableBufferPointer { StoredFieldsReader.read(UnsafeBufferPointer($0)) },
            fields,
            written,
            file: file,
            line: line
        )
    }

    func testEveryTypeItWritesIsWhatTheEncoderWrites() throws {
        var control = ""
        for c in 0..<0x20 { control.unicodeScalars.append(Unicode.Scalar(UInt8(c))) }
        let cases: [[String: FieldValue]] = [
            [:],
            ["title": .string("Lisbon")],
            ["esc": .string("quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} del \u{7F} é 😀 \u{FFFF} \u{2028}")],
            ["control": .string(control)],
            ["": .string("")],
            ["key \"with\" / escapes\n😀": .integer(1)],
            ["min": .integer(.min), "max": .integer(.max), "zero": .integer(0), "neg": .integer(-42)],
            ["yes": .boolean(true), "no": .boolean(false)],
            ["bytes": .bytes(Data([0, 1, 2, 255, 254, 61])), "none": .bytes(Data()), "slashy": .bytes(Data(repeating: 0xFF, count: 30))],
            [
                "owner": .reference(RecordID(recordName: "person/1", zoneID: zone), action: .none),
                "parent": .reference(RecordID(recordName: "p", zoneID: zone), action: .deleteSelf),
            ],
            [
                "tags": .list([.string("sun"), .string("sea/")]), "empty": .list([]), "nums": .list([.integer(1), .integer(-2)]),
                "refs": .list([.reference(RecordID(recordName: "r", zoneID: zone), action: .deleteSelf)]), "blobs": .list([.bytes(Data([1, 2, 3]))]),
            ],
            ["secret": .encrypted(.bytes(Data([9, 8]))), "pin": .encrypted(.integer(42)), "words": .encrypted(.list([.string("a/b")]))],
        ]
        for fields in cases { try check(fields) }
    }

    func testRandomFieldsAreWhatTheEncoderWrites() throws {
        var random = SeededRandom(seed: 20_261_124)
        let alphabet = Array("aé/\\\"\n\t\u{0}\u{1F}😀 z".unicodeScalars)
        func text() -> String {
            var s = String.UnicodeScalarView()
            for _ in 0..<random.next(12) { s.append(alphabet[random.next(alphabet.count)]) }
            return String(s)
        }
        func value(_ depth: Int) -> FieldValue {
            switch random.next(depth == 0 ? 6 : 5) {
            case 0: return .string(text())
            case 1: return .integer(Int64(random.next(2_000_001)) - 1_000_000)
            case 2: return .boolean(random.next(2) == 0)
            case 3: return .bytes(Data((0..<random.next(20)).map { _ in UInt8(random.next(256)) }))
            case 4:
                return .reference(
                    RecordID(recordName: text(), zoneID: RecordZoneID(zoneName: text(), ownerName: text())),
                    action: random.next(2) == 0 ? .none : .deleteSelf
                )
            default: return .list((0..<random.next(4)).map { _ in value(depth + 1) })
            }
        }
        for _ in 0..<300 {
            var fields: [String: FieldValue] = [:]
            for _ in 0..<random.next(6) { fields[text()] = value(0) }
            try check(fields)
        }
    }

    /// Doubles, dates and locations (alone or in a list) are the encoder's to spell.
    func testNumbersWithFractionsAreLeftToTheEncoder() throws {
        for fields: [String: FieldValue] in [
            ["d": .double(0.1)], ["t": .date(Date(timeIntervalSince1970: 1.5))],
            ["l": .location(Location(latitude: 1, longitude: 2))],
            ["s": .string("x"), "list": .list([.integer(1), .double(2)])],
        ] {
            XCTAssertNil(StoredFieldsWriter.write(fields))
            let stored = try StoredFields(fields)
            XCTAssertEqual(try StoredFields.decode(stored.json), fields)
        }
    }
}
