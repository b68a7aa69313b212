import Foundation
import XCTest

@testable import ShareFlow

/// The decision log's JSON writer (`JSONText`) against Foundation's reader: whatever it writes
/// reads back as the value written, keys sorted, and what JSON cannot say is `null`.
final class JSONTextTests: XCTestCase {
    func testWhatItWritesReadsBackAsTheValue() throws {
        var generator = SystemRandomNumberGenerator()
        func value(_ depth: Int) -> Any {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 8), using: &generator) {
            case 0: return Bool.random(using: &generator)
            case 1: return Double(Int.random(in: -1_000_000...1_000_000, using: &generator)) / 8
            case 2: return Int.random(in: Int(Int32.min)...Int(Int32.max), using: &generator)
            case 3:
                return String(
                    (0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                        Character(Unicode.Scalar(UInt8.random(in: 0...0x7E, using: &generator)))
                    }
                ) + "é\u{1F600}"
            case 4: return 1_764_500_000.123_456
            case 5: return (0..<Int.random(in: 0..<4, using: &generator)).map { _ in value(depth + 1) }
            default:
                var o: [String: Any] = [:]
                for i in 0..<Int.random(in: 0..<5, using: &generator) { o["k\(i)\(["/", "\"", "\\", "\n", "\u{01}"][i % 5])"] = value(depth + 1) }
                return o
            }
        }
        for _ in 0..<300 {
            let original = ["v": value(0)]
            let text = JSONText.of(original)
            let back = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
            XCTAssertEqual(back, original as NSDictionary, text)
        }
    }

    func testKeysSortedEscapesAndWhatJSONCannotSay() {
        XCTAssertEqual(JSONText.of(["b": 1, "a": [true, "x/y"], "c": NSNull()] as [String: Any]), #"{"a":[true,"x/y"],"b":1,"c":null}"#)
        XCTAssertEqual(JSONText.of(["q\"\\\n\t\u{0}"]), #"["q\"\\\n\t\u0000"]"#)
        XCTAssertEqual(JSONText.of([Double.nan, -Double.infinity, 2.5, 3.0, 1e300] as [Any]), "[null,null,2.5,3,1e+300]")
        XCTAssertEqual(JSONText.of(nil), "null")
        XCTAssertEqual(JSONText.of([[String: Any]]()), "[]")
        // A value read back from JSON (NSNumber) is written as it reads.
        let read = try? JSONSerialization.jsonObject(with: Data(#"{"t":true,"n":12.5,"i":3}"#.utf8))
        XCTAssertEqual(JSONText.of(read), #"{"i":3,"n":12.5,"t":true}"#)
    }
}

extension JSONTextTests {
    /// The log's cuts, made while writing: long strings end in `…` (never a split character),
    /// long lists keep their first items, `url` keys are left out at any depth, and an input
    /// still too large is logged as its point, time and caller, marked truncated.
    func testTheLogsCutsAreMadeWhileWriting() throws {
        let long = String(repeating: "é", count: PolicyInput.loggedString)  // two bytes each
        let text = PolicyInput.loggedText([
            "point": "share.save", "url": "https://secret", "title": long,
            "share": ["url": "https://secret", "participants": Array(repeating: ["role": "owner"], count: PolicyInput.loggedItems + 5)],
        ])
        let back = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertNil(back["url"])
        XCTAssertFalse(text.contains("secret"))
        let title = try XCTUnwrap(back["title"] as? String)
        XCTAssertTrue(title.hasSuffix("…"))
        XCTAssertEqual(title.utf8.count, PolicyInput.loggedString + "…".utf8.count)
        let share = try XCTUnwrap(back["share"] as? [String: Any])
        XCTAssertEqual((share["participants"] as? [Any])?.count, PolicyInput.loggedItems)
        XCTAssertNil(share["url"])

        let huge = PolicyInput.loggedText([
            "point": "share.save", "time": 5.0, "caller": ["userRecordID": "_a"],
            "share": ["participants": Array(repeating: ["note": String(repeating: "x", count: 1_000)], count: 900)],
        ])
        let small = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(huge.utf8)) as? [String: Any])
        XCTAssertEqual(small["truncated"] as? Bool, true)
        XCTAssertEqual(small["point"] as? String, "share.save")
        XCTAssertNil(small["share"])
        XCTAssertLessThan(huge.utf8.count, 200)
    }
}

extension JSONTextTests {
    /// A cut lands on a character's boundary, whatever the character's width (the attack of
    /// stop 57: a 4-byte emoji straddling byte 1,024 read back as U+FFFD, and replay flipped a
    /// policy that refuses U+FFFD).
    func testACutNeverSplitsACharacter() throws {
        for wide in ["é", "€", "😀", "👩‍👩‍👧", "e\u{301}"] {
            for pad in 1_015...1_024 {
                let title = String(repeating: "a", count: pad) + wide + "tail"
                let text = PolicyInput.loggedText(["title": title])
                let back = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                let kept = try XCTUnwrap(back["title"] as? String)
                XCTAssertFalse(kept.contains("\u{FFFD}"), "\(pad) + \(wide)")
                guard title.utf8.count > PolicyInput.loggedString else {
                    XCTAssertEqual(kept, title)
                    continue
                }
                XCTAssertTrue(kept.hasSuffix("…"), "\(pad) + \(wide)")
                XCTAssertLessThanOrEqual(kept.utf8.count, PolicyInput.loggedString + "…".utf8.count)
                XCTAssertTrue(title.hasPrefix(String(kept.dropLast())) || title.unicodeScalars.starts(with: kept.dropLast().unicodeScalars))
            }
        }
        XCTAssertEqual(StoreDecisionLog.json([String(repeating: "a", count: 1_023) + "😀"]), "[\"" + String(repeating: "a", count: 1_023) + "…\"]")
    }

    /// The truncated form is itself bounded: a caller with thousands of long addresses keeps
    /// who it is and the first few of each.
    func testTheTruncatedFormStaysUnderTheBound() throws {
        let emails = (0..<1_100).map { "\($0)" + String(repeating: "x", count: 240) + "@example.com" }
        let phones = (0..<1_100).map { "+1555\($0)" }
        let text = PolicyInput.loggedText([
            "point": "share.save", "caller": ["userRecordID": "_a", "email": emails[0], "emails": emails, "phones": phones],
            "share": ["participants": Array(repeating: ["note": String(repeating: "y", count: 1_000)], count: 900)],
        ])
        XCTAssertLessThanOrEqual(text.utf8.count, PolicyInput.loggedBytes)
        let back = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertEqual(back["truncated"] as? Bool, true)
        let caller = try XCTUnwrap(back["caller"] as? [String: Any])
        XCTAssertEqual(caller["userRecordID"] as? String, "_a")
        XCTAssertEqual((caller["emails"] as? [String])?.count, 10)
    }
}
