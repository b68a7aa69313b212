import Foundation
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// A grammar-aware fuzz of StoredFieldsChecker against StoredFieldsReader.
final class StoredFieldsCheckerFuzzTests: XCTestCase {
    func testFuzzCheckerNeverPassesWhatReaderRefuses() throws {
        var rng = SeededRandom(seed: 25)
        let numbers = [
            "0", "-0", "1", "-1", "1E5", "1e-400", "-1e-400", "1e400", "1e308", "1.7976931348623157e308", "1.7976931348623159e308",
            "4.9e-324", "2.4e-324", "2.5e-324", "-", "00", "0.0", "0e0", "0E+0", "0e-0", "1.", ".5", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551616", String(repeating: "9", count: 400),
            "1" + String(repeating: "0", count: 310), "0." + String(repeating: "0", count: 400) + "1", "1e", "1e+", "1e-", "+1", "NaN",
            "inf", "0x10", "1_000", "١", "1e99999999999999999999", "1e-99999999999999999999", "-0.0e-0",
        ]
        let strings = ["\"\"", "\"a\"", "\"\u{0}\"", "\"\\u0000\"", "\"\u{7F}\"", "\"é\"", "\"\\\"\"", "\"a\\\"", "\"\u{1F}\"", "\"x"]
        let names = [
            "\"\"", "\"a\"", "\"b\"", "\"a\u{7F}\"", "\"\u{7F}\"", "\" \"", "\"\\u0061\"", "\"é\"", "\"e\u{301}\"", "\"\u{E9}\"", "\"a\u{0}\"",
        ]
        let keys = ["s", "i", "d", "t", "b", "y", "l", "la", "lo", "r", "z", "\\u0073", "S", ""]
        func value() -> String {
            let key = keys.randomElement(using: &rng)!
            var v: String
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: v = numbers.randomElement(using: &rng)!
            case 1: v = strings.randomElement(using: &rng)!
            case 2: v = ["true", "false", "tru", "null", "truex"].randomElement(using: &rng)!
            default: v = numbers.randomElement(using: &rng)! + numbers.randomElement(using: &rng)!
            }
            return "{\"\(key)\":\(v)}"
        }
        var passed = 0
        var checked = 0
        for _ in 0..<40_000 {
            var parts: [String] = []
            let count = Int.random(in: 0...34, using: &rng)
            for i in 0..<count {
                let name = Bool.random(using: &rng) ? "\"f\(i)\"" : names.randomElement(using: &rng)!
                parts.append("\(name):\(value())")
            }
            var bytes = Array(("{" + parts.joined(separator: ",") + "}").utf8)
            if Int.random(in: 0..<4, using: &rng) == 0, !bytes.isEmpty {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
                case 2: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
                default: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
                }
            }
            checked += 1
            let ok = bytes.withUnsafeBufferPointer { StoredFieldsChecker.readable($0) }
            if ok {
                passed += 1
                let read = bytes.withUnsafeBufferPointer { StoredFieldsReader.read($0) }
                XCTAssertNotNil(read, String(decoding: bytes, as: UTF8.self))
                if read == nil { return }
            }
        }
        print("fuzz: \(passed) of \(checked) passed the checker")
        // random bytes
        for _ in 0..<40_000 {
            let n = Int.random(in: 0..<40, using: &rng)
            var bytes = Array("{\"a\":{\"".utf8)
            for _ in 0..<n {
                bytes.append(
                    [
                        UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ":"), UInt8(ascii: ","), UInt8(ascii: "s"),
                        UInt8(ascii: "d"), UInt8(ascii: "1"), UInt8(ascii: "e"), UInt8(ascii: "-"), UInt8(ascii: "."), 0x80, 0xFF, UInt8(ascii: "\\"),
                    ].randomElement(using: &rng)!
                )
            }
            let ok = bytes.withUnsafeBufferPointer { StoredFieldsChecker.readable($0) }
            if ok { XCTAssertNotNil(bytes.withUnsafeBufferPointer { StoredFieldsReader.read($0) }, String(decoding: bytes, as: UTF8.self)) }
        }
    }
}
