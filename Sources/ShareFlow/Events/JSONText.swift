import Foundation

/// JSON text of plain values (strings, numbers, booleans, lists, string-keyed objects, nil),
/// keys sorted, written byte by byte: what the decision log keeps of each decision (SPEC §18
/// P3). Foundation's `JSONSerialization` bridged every dictionary to an `NSDictionary`, sorted
/// its keys through `AnyHashable` and cast each value several times: about 1.1 million
/// instructions for one accept's input under callgrind, 300 times the decision it describes.
///
/// A number that is not finite is written `null` (JSON has no NaN); a value of another type
/// (an `NSNumber` read back from JSON) is written by Foundation, alone.
///
/// ```swift
/// JSONText.of(["b": 1, "a": [true, "x"]])   // {"a":[true,"x"],"b":1}
/// ```
enum JSONText {
    /// What a write keeps of long values (the decision log's cuts, SPEC §18 P3): strings cut to
    /// `string` bytes and ending in `…`, lists to their first `items`, and objects' keys named
    /// `droppedKey` left out.
    struct Limits {
        var string = Int.max
        var items = Int.max
        var droppedKey: String? = nil
    }

    /// `value` as JSON text.
    static func of(_ value: Any?, limits: Limits? = nil) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, to: &out, limits)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `value` as JSON to `out`.
    static func write(_ value: Any?, to out: inout [UInt8], _ limits: Limits? = nil) {
        guard let value else { return out.append(contentsOf: "null".utf8) }
        // Exact types first: a Swift `Bool` or `Double` in an `Any` is checked without the
        // bridging a cast to `NSNumber` would try.
        switch value {
        case let s as String:
            string(s, to: &out, limits)
        case let o as [String: Any]:
            out.append(UInt8(ascii: "{"))
            var first = true
            // Sorted as pairs: no key is hashed again to find its value.
            for (key, item) in o.sorted(by: { $0.key < $1.key }) where key != limits?.droppedKey {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                string(key, to: &out, nil)
                out.append(UInt8(ascii: ":"))
                write(item, to: &out, limits)
            }
            out.append(UInt8(ascii: "}"))
        case let l as [String]:
            list(l, to: &out, limits) { string($0, to: &$1, limits) }
        case let l as [[String: Any]]:
            list(l, to: &out, limits) { write($0, to: &$1, limits) }
        case let l as [Any]:
            list(l, to: &out, limits) { write($0, to: &$1, limits) }
        default:
            scalar(value, to: &out)
        }
    }

    private static func list<T>(_ items: [T], to out: inout [UInt8], _ limits: Limits?, _ each: (T, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        for (i, item) in items.prefix(limits?.items ?? Int.max).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            each(item, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func scalar(_ value: Any, to out: inout [UInt8]) {
        switch ObjectIdentifier(type(of: value)) {
        case ObjectIdentifier(Bool.self):
            out.append(contentsOf: (value as! Bool ? "true" : "false").utf8)
        case ObjectIdentifier(Double.self):
            number(value as! Double, to: &out)
        case ObjectIdentifier(Int.self):
            out.append(contentsOf: String(value as! Int).utf8)
        case ObjectIdentifier(Int64.self):
            out.append(contentsOf: String(value as! Int64).utf8)
        case ObjectIdentifier(NSNull.self):
            out.append(contentsOf: "null".utf8)
        default:
            // Read back from JSON (an NSNumber, true or a number as it was written).
            let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
            out.append(contentsOf: data.map { [UInt8]($0) } ?? Array("null".utf8))
        }
    }

    /// A whole number as an integer (as Foundation writes one), any other the shortest text
    /// that reads back as the same `Double`.
    private static func number(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else { return out.append(contentsOf: "null".utf8) }
        if d == d.rounded(), abs(d) < 9.007_199_254_740_992e15 {
            out.append(contentsOf: String(Int64(d)).utf8)
        } else {
            out.append(contentsOf: "\(d)".utf8)
        }
    }

    /// The longest start of `s` of at most `bytes` bytes that ends on a character's boundary:
    /// never half a character, which would read back as U+FFFD, a character `s` never had (and a
    /// policy asked again on it could decide otherwise).
    static func cut(_ s: String, bytes: Int) -> String {
        let utf8 = s.utf8
        guard utf8.count > bytes else { return s }
        var end = utf8.index(utf8.startIndex, offsetBy: max(bytes, 0))
        while end > utf8.startIndex, UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
        return String(s[..<end])
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`
    /// (`StoredFieldsWriter`'s escapes); `/` and everything else as is. Cut as `limits` says.
    private static func string(_ s: String, to out: inout [UInt8], _ limits: Limits?) {
        if let most = limits?.string, s.utf8.count > most { return string(cut(s, bytes: most) + "…", to: &out, nil) }
        // Most strings need no escape: appended whole, checked over their bytes in place.
        let plain =
            s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
                for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
                return true
            } ?? false
        guard plain else { return StoredFieldsWriter.string(s, into: &out, escapingSlash: false) }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: s.utf8)
        out.append(UInt8(ascii: "\""))
    }
}
