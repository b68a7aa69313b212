import Foundation

/// Says, building nothing, that `StoredFieldsReader` reads a record's stored fields: so a feed
/// page can hand out a record whose fields are decoded when first read (`LazyFields`) and
/// still refuse a damaged row when it reads it, as every other read does.
///
/// A first sync reads every record of a zone; building each one's dictionary and strings was
/// half its time (SPEC §12, `sync_first_vs_sqlite`). The check walks the same grammar as the
/// reader, allocating nothing, and is the stricter of the two: it answers true only where the
/// reader cannot fail, and false for anything it does not follow (an escape, a name that is
/// not ASCII, more than `maxFields` fields, bytes, lists, locations, references), where the
/// caller decodes at once. `StoredFieldsCheckerTests` holds it to the reader on every input
/// the reader's own tests use.
struct StoredFieldsChecker {
    /// Past this many fields a record is decoded at once: names are compared pairwise.
    static let maxFields = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0

    /// True when `StoredFieldsReader.read(json)` gives fields (never nil).
    static func readable(_ json: UnsafeBufferPointer<UInt8>) -> Bool {
        var checker = StoredFieldsChecker(bytes: json)
        return checker.object() && checker.at == json.count
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private var next: UInt8? { at < bytes.count ? bytes[at] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard next == byte else { return false }
        at += 1
        return true
    }

    private mutating func object() -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        // The names seen, as byte ranges: ASCII without escapes, so equal bytes are equal
        // strings and a repeated name (which the reader refuses) is found here too.
        return withUnsafeTemporaryAllocation(of: (start: Int, count: Int).self, capacity: StoredFieldsChecker.maxFields) { names in
            var count = 0
            repeat {
                guard count < StoredFieldsChecker.maxFields, let name = asciiName() else { return false }
                for i in 0..<count where names[i].count == name.count && memcmp(bytes.baseAddress! + names[i].start, bytes.baseAddress! + name.start, name.count) == 0 {
                    return false
                }
                names[count] = name
                count += 1
                guard take(UInt8(ascii: ":")), value() else { return false }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}"))
        }
    }

    /// A field's name: a JSON string of printable ASCII without escapes.
    private mutating func asciiName() -> (start: Int, count: Int)? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = at
        while let c = next, c != UInt8(ascii: "\"") {
            guard c >= 0x20, c < 0x80, c != UInt8(ascii: "\\") else { return nil }
            at += 1
        }
        guard take(UInt8(ascii: "\"")) else { return nil }
        return (start, at - 1 - start)
    }

    /// A string value without escapes (any other bytes the reader takes, repairing invalid
    /// UTF-8): up to the first `"`, `\\` or control character, eight bytes a step.
    private mutating func plainString() -> Bool {
        guard take(UInt8(ascii: "\"")), let base = bytes.baseAddress else { return false }
        var i = at
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= bytes.count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
            // Exact tests (no false alarm): a byte below 0x20, a zero byte of each XOR.
            let stop = ((w &- ones &* 0x20) & ~w) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if stop & highs != 0 { break }
            i += 8
        }
        while i < bytes.count, base[i] >= 0x20, base[i] != UInt8(ascii: "\""), base[i] != UInt8(ascii: "\\") { i += 1 }
        guard i < bytes.count, base[i] == UInt8(ascii: "\"") else { return false }
        at = i + 1
        return true
    }

    /// One value: `{"s":…}`, `{"i":…}`, `{"b":…}`, `{"d":…}` or `{"t":…}`, nothing else.
    private mutating func value() -> Bool {
        guard take(UInt8(ascii: "{")), take(UInt8(ascii: "\"")), bytes.count - at >= 3,
              bytes[at + 1] == UInt8(ascii: "\""), bytes[at + 2] == UInt8(ascii: ":") else { return false }
        let key = bytes[at]
        at += 3
        let good: Bool
        switch key {
        case UInt8(ascii: "s"): good = plainString()
        case UInt8(ascii: "i"): good = integer()
        case UInt8(ascii: "b"): good = word("true") || word("false")
        case UInt8(ascii: "d"), UInt8(ascii: "t"): good = finiteNumber()
        default: good = false
        }
        return good && take(UInt8(ascii: "}"))
    }

    private mutating func word(_ w: StaticString) -> Bool {
        let count = w.utf8CodeUnitCount
        guard bytes.count - at >= count else { return false }
        for i in 0..<count where bytes[at + i] != w.utf8Start[i] { return false }
        at += count
        return true
    }

    /// As `StoredFieldsReader.integer()`: `-?(0|[1-9][0-9]*)` within Int64, no fraction or exponent.
    private mutating func integer() -> Bool {
        let negative = take(UInt8(ascii: "-"))
        guard let first = next, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return false }
        var magnitude: UInt64 = 0, digits = 0
        while let d = next, d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(d - UInt8(ascii: "0")))
            guard !o1, !o2 else { return false }
            magnitude = sum
            digits += 1
            at += 1
        }
        guard first != UInt8(ascii: "0") || digits == 1 else { return false }
        if let c = next, c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { return false }
        return magnitude <= UInt64(Int64.max) + (negative ? 1 : 0)
    }

    /// As `StoredFieldsReader.double()`: JSON's number grammar, read as a finite double.
    private mutating func finiteNumber() -> Bool {
        let start = at
        _ = take(UInt8(ascii: "-"))
        func digits(_ c: inout StoredFieldsChecker) -> Int {
            var n = 0
            while let d = c.next, d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") { c.at += 1; n += 1 }
            return n
        }
        let leading = at
        let whole = digits(&self)
        guard whole > 0, bytes[leading] != UInt8(ascii: "0") || whole == 1 else { return false }
        if take(UInt8(ascii: ".")) { guard digits(&self) > 0 else { return false } }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits(&self) > 0 else { return false }
        }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)) else { return false }
        return value.isFinite
    }
}

/// A record's fields as a read left them: decoded, or checked (`StoredFieldsChecker`) and kept
/// as their bytes, to be decoded when first read.
package enum FieldsAsRead {
    case decoded([String: FieldValue])
    case checked(CheckedFields)

    package var fields: [String: FieldValue] {
        switch self {
        case .decoded(let fields): return fields
        case .checked(let checked): return checked.decode()
        }
    }
}

/// Stored fields `StoredFieldsChecker` passed, as bytes: `StoredFieldsReader` reads them.
package struct CheckedFields {
    let bytes: [UInt8]

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = Array(bytes) }

    package func decode() -> [String: FieldValue] {
        // Never empty for fields that had some: the checker passes only what the reader reads
        // (StoredFieldsCheckerTests), so the `[:]` is never taken.
        bytes.withUnsafeBufferPointer { StoredFieldsReader.read($0) } ?? [:]
    }
}
