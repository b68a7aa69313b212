import Foundation
import XCTest

@testable import ShareFlowServer

/// The answers' JSON writer (`WireJSON`) against `JSONSerialization`, the writer it stands in
/// for: every value written as JSONSerialization writes it, whatever its type.
final class WireJSONTests: XCTestCase {
    private func ours(_ object: WireFormat.Object) throws -> String {
        String(decoding: try WireJSON.bytes(object), as: UTF8.self)
    }

    private func theirs(_ object: WireFormat.Object) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]), as: UTF8.self)
    }

    /// One key each, so the bytes compare exactly (an object's key order is JSON's to leave open).
    func testEachValueIsWrittenAsJSONSerializationWritesIt() throws {
        var everyByte = ""
        for i in 0..<0x80 { everyByte.unicodeScalars.append(Unicode.Scalar(UInt8(i))) }
        let values: [Any] = [
            "", "plain", everyByte, "é 😀 \u{2028} \u{FFFF} a/b \\ \"q\"", "\u{0}nul",
            0, 1, -1, Int.max, Int.min, Int64.max, Int64.min, Int64(0), Int64(-42),
            true, false, NSNumber(value: true), NSNumber(value: false), NSNumber(value: 7), NSNumber(value: 2.5),
            NSNumber(value: UInt64.max), 1.0, 1.5, -0.0, 1e300, 0.1, 123456789012.0, 1e-7,
            NSNull(), Optional<String>.none as Any, Optional("wrapped") as Any,
            [Any](), ["a", 1, true, NSNull()] as [Any], ["x", "y"] as [String], [["k": 1]] as [WireFormat.Object],
            WireFormat.Object(), ["nested": ["deeper": [1, "2", ["three": 3.5]] as [Any]]] as WireFormat.Object,
            NSString(string: "bridged"), [1, 2] as [Int],
        ]
        for value in values {
            let object: WireFormat.Object = ["key \"/\n": value]
            XCTAssertEqual(try ours(object), try theirs(object), "\(value) of \(type(of: value))")
        }
    }

    func testAWholeAnswerReadsBackAsTheSameObject() throws {
        let participants: [Any] = (0..<64).map { i -> WireFormat.Object in
            [
                "participantId": "p\(i)", "type": "USER", "acceptanceStatus": i % 2 == 0 ? "ACCEPTED" : "PENDING", "permission": "READ_WRITE",
                "userIdentity": [
                    "lookupInfo": ["emailAddress": "guest\(i)@example.com"], "nameComponents": ["givenName": "Guest", "familyName": "\(i)"],
                    "userRecordName": "_\(i)",
                ] as WireFormat.Object,
                "orderedIndex": i, "isOwner": i == 0,
            ]
        }
        let answer: WireFormat.Object = [
            "results": [
                ["share": ["participants": participants, "shortGUID": "abc/def"], "timestamp": Int64(1_790_000_000_000)]
                    as WireFormat.Object
            ] as [Any]
        ]
        let read = try JSONSerialization.jsonObject(with: Data(try WireJSON.bytes(answer))) as? NSDictionary
        let expected = try JSONSerialization.jsonObject(with: JSONSerialization.data(withJSONObject: answer)) as? NSDictionary
        XCTAssertEqual(read, expected)
    }

    /// What JSONSerialization cannot write, WireJSON refuses too: the answer falls back to it.
    func testAValueOfNoJSONTypeIsRefused() {
        XCTAssertThrowsError(try WireJSON.bytes(["nan": Double.nan]))
        XCTAssertThrowsError(try WireJSON.bytes(["date": Date()]))
        XCTAssertEqual(String(decoding: WireObject(["nan": Double.nan]).json, as: UTF8.self), "{}")
    }
}
