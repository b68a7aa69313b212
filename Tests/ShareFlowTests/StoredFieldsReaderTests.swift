import Foundation
import XCTest

@testable import ShareFlow

/// The in-place reader of stored fields (`StoredFieldsReader`) against `JSONDecoder`, the
/// decoder it stands in for: on ShareFlow's own form it gives the same fields, and on anything
/// else it gives nil (the decoder's turn), never another value.
final class StoredFieldsReaderTests: XCTestCase {
    private func read(_ json: String) -> [String: FieldValue]? {
        var bytes = Array(json.utf8)
        return bytes.withUnsafeMutableBufferPointer { StoredFieldsReader.read(UnsafeBufferPointer($0)) }
    }

    private func decoded(_ json: String) -> [String: FieldValue]? {
        try? JSONDecoder().decode([String: FieldValue].self, from: Data(json.utf8))
    }

    private let zone = RecordZoneID(zoneName: "Trips \"2026\"/é", ownerName: "_owner")

    /// Every value type, with the strings and numbers an encoder escapes or spells oddly.
    private var everyType: [[String: FieldValue]] {
        [
            [:],
            ["title": .string("Lisbon")],
            ["esc": .string("quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} é 😀 \u{FFFF}")],
            ["": .string("")],
            ["key \"with\" / escapes\n😀": .integer(1)],
            ["min": .integer(.min), "max": .integer(.max), "zero": .integer(0), "neg": .integer(-42)],
            [
                "d": .double(0.1), "e": .double(-1e-300), "f": .double(1.7976931348623157e308), "g": .double(5), "h": .double(-0.0),
                "i": .double(123456789.125), "j": .double(.leastNonzeroMagnitude), "k": .double(1e22),
            ],
            ["yes": .boolean(true), "no": .boolean(false)],
            ["bytes": .bytes(Data([0, 1, 2, 255, 254, 61])), "none": .bytes(Data())],
            ["when": .date(Date(timeIntervalSince1970: 1_790_000_000.5)), "before": .date(Date(timeIntervalSince1970: -86_400))],
            ["where": .location(Location(latitude: 38.72, longitude: -9.14)), "pole": .location(Location(latitude: -90, longitude: 180))],
            [
                "owner": .reference(RecordID(recordName: "person/1", zoneID: zone), action: .none),
                "parent": .reference(RecordID(recordName: "p", zoneID: zone), action: .deleteSelf),
            ],
            [
                "tags": .list([.string("sun"), .string("sea")]), "empty": .list([]), "nums": .list([.integer(1), .integer(-2)]),
                "places": .list([.location(Location(latitude: 1, longitude: 2))]),
                "refs": .list([.reference(RecordID(recordName: "r", zoneID: zone), action: .deleteSelf)]),
                "blobs": .list([.bytes(Data([1, 2, 3]))]), "dates": .list([.date(Date(timeIntervalSince1970: 0))]),
            ],
            // What the reader leaves to the decoder: a location with more than its coordinates,
            // an encrypted value. The same fields either way.
            [
                "detailed": .location(
                    {
                        var l = Location(latitude: 1, longitude: 2)
                        l[.altitude] = 3
                        l.timestamp = Date(timeIntervalSince1970: 5)
                        return l
                    }()
                ),
                "secret": .encrypted(.string("s")),
            ],
        ]
    }

    func testShareFlowsOwnFormReadsAsTheDecoderReadsIt() throws {
        for fields in everyType {
            let json = try StoredFields(fields).json
            let fast = try XCTUnwrap(read(json), "the reader takes ShareFlow's own form: \(json)")
            XCTAssertEqual(fast, fields, json)
            XCTAssertEqual(fast, decoded(json), json)
        }
    }

    /// Inputs the reader leaves to the decoder: whatever the decoder makes of them (a value or
    /// an error), the reader never makes another value of its own.
    func testAnythingElseIsLeftToTheDecoder() {
        let others = [
            "", " {}", "{} ", "{ }", "[]", "null", "\"s\"", "{\"a\":{\"s\":\"x\"} }", "{\"a\" : {\"s\":\"x\"}}",
            "{\"a\":{\"s\":\"x\"},\"a\":{\"s\":\"y\"}}",  // a repeated field
            "{\"a\":{\"s\":\"x\",\"i\":1}}",  // two cases' keys
            "{\"a\":{\"s\":\"x\",\"extra\":1}}", "{\"a\":{}}", "{\"a\":{\"q\":1}}",
            "{\"a\":{\"i\":1.0}}", "{\"a\":{\"i\":1e2}}", "{\"a\":{\"i\":01}}", "{\"a\":{\"i\":9223372036854775808}}",
            "{\"a\":{\"i\":-9223372036854775809}}", "{\"a\":{\"i\":\"1\"}}",
            "{\"a\":{\"d\":1e400}}", "{\"a\":{\"d\":.5}}", "{\"a\":{\"d\":1.}}", "{\"a\":{\"d\":inf}}", "{\"a\":{\"d\":NaN}}",
            "{\"a\":{\"d\":0x10}}", "{\"a\":{\"d\":+1}}", "{\"a\":{\"d\":1e}}",
            "{\"a\":{\"b\":1}}", "{\"a\":{\"b\":tru}}", "{\"a\":{\"y\":\"***\"}}",
            "{\"a\":{\"la\":1}}", "{\"a\":{\"la\":1,\"lo\":2,\"s\":\"x\"}}",
            "{\"a\":{\"r\":\"x\",\"z\":\"z\"}}", "{\"a\":{\"r\":\"x\",\"z\":\"z\",\"o\":\"o\",\"a\":\"cascade\"}}",
            "{\"a\":{\"s\":\"x\",\"z\":\"z\",\"o\":\"o\"}}",
            "{\"a\":{\"l\":[[]]}}", "{\"a\":{\"l\":[{\"l\":[]}]}}", "{\"a\":{\"l\":[1]}}", "{\"a\":{\"l\":[{\"s\":\"x\"},]}}",
            "{\"a\":{\"s\":\"\\ud800\"}}", "{\"a\":{\"s\":\"\\udc00\"}}", "{\"a\":{\"s\":\"\\x\"}}", "{\"a\":{\"s\":\"\\u12\"}}",
            "{\"a\":{\"s\":\"tab\there\"}}", "{\"a\":{\"s\":\"unterminated}}", "{\"a\":{\"s\":null}}",
            "{\"a\":{\"s\":\"x\"}", "{\"a\":{\"s\":\"x\"}}}", "{\"a\":{\"s\":\"x\"},}",
        ]
        for json in others {
            if let fast = read(json) {
                XCTAssertEqual(fast, decoded(json), "the reader read \(json) otherwise than the decoder")
            }
        }
        // The ones the decoder rejects, the reader never accepts.
        XCTAssertNil(read("{\"a\":{\"d\":1e400}}"))
        XCTAssertNil(read("{\"a\":{\"s\":\"\\ud800\"}}"))
        XCTAssertNil(read("{\"a\":{\"y\":\"***\"}}"))
        XCTAssertNil(read("{\"a\":{\"i\":9223372036854775808}}"))
    }

    /// Random fields of every type, encoded as the store writes them: the reader reads each
    /// as written.
    func testRandomFieldsRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        func scalarValue(_ kind: Int) -> FieldValue {
            switch kind {
            case 0:
                return .string(
                    String(
                        (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                            Character(Unicode.Scalar([0x22, 0x5C, 0x2F, 0x0A, 0x41, 0xE9, 0x1F600, 0x7F, 0x01].randomElement(using: &generator)!)!)
                        }
                    )
                )
            case 1: return .integer(Int64.random(in: .min ... .max, using: &generator))
            case 2:  // any finite double, either sign
                let magnitude = Double(bitPattern: UInt64.random(in: 0...0x7FEF_FFFF_FFFF_FFFF, using: &generator))
                return .double(Bool.random(using: &generator) ? magnitude : -magnitude)
            case 3: return .boolean(Bool.random(using: &generator))
            case 4: return .bytes(Data((0..<Int.random(in: 0...9, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            case 5: return .date(Date(timeIntervalSince1970: Double.random(in: -1e10...1e10, using: &generator)))
            case 6:
                return .location(
                    Location(latitude: Double.random(in: -90...90, using: &generator), longitude: Double.random(in: -180...180, using: &generator))
                )
            default:
                return .reference(
                    RecordID(recordName: "r\(Int.random(in: 0...99, using: &generator))", zoneID: zone),
                    action: Bool.random(using: &generator) ? .none : .deleteSelf
                )
            }
        }
        for _ in 0..<300 {
            var fields: [String: FieldValue] = [:]
            for n in 0..<Int.random(in: 0...6, using: &generator) {
                let kind = Int.random(in: 0...8, using: &generator)
                fields["f\(n)"] =
                    kind == 8 ? .list((0..<Int.random(in: 0...3, using: &generator)).map { _ in scalarValue(n % 8) }) : scalarValue(kind)
            }
            let json = try StoredFields(fields).json
            XCTAssertEqual(read(json), fields, json)
        }
    }
}
