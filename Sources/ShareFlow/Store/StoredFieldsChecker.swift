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
                for i in 0..<count
                where names[i].count == name.count && memcmp(bytes.baseAddress! + names[i].start, bytes.baseAddress! + name.start, name.count) == 0 {
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
    /// UTF-8): up to the first `"`, `\\` or control character (`plainRunEnd`).
    private mutating func plainString() -> Bool {
        guard take(UInt8(ascii: "\"")), let base = bytes.baseAddress else { return false }
        let i = StoredFieldsChecker.plainRunEnd(base, from: at, count: bytes.count)
        guard i < bytes.count, base[i] == UInt8(ascii: "\"") else { return false }
        at = i + 1
        return true
    }

    /// Where the first `"`, `\\` or control character is in `base[from..<count]` (`count` if
    /// none): eight bytes a step. The checker's and the reader's scan of a string's bytes.
    static func plainRunEnd(_ base: UnsafePointer<UInt8>, from: Int, count: Int) -> Int {
        var i = from
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = w ^ (ones &* 0x22)
            let backslash = w ^ (ones &* 0x5C)
            // Exact tests (no false alarm): a byte below 0x20, a zero byte of each XOR.
            let stop = ((w &- ones &* 0x20) & ~w) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if stop & highs != 0 { break }
            i += 8
        }
        while i < count, base[i] >= 0x20, base[i] != UInt8(ascii: "\""), base[i] != UInt8(ascii: "\\") { i += 1 }
        return i
    }

    /// One value: `{"s":…}`, `{"i":…}`, `{"b":…}`, `{"d":…}` or `{"t":…}`, nothing else.
    private mutating func value() -> Bool {
        guard take(UInt8(ascii: "{")), take(UInt8(ascii: "\"")), bytes.count - at >= 3,
            bytes[at + 1] == UInt8(ascii: "\""), bytes[at + 2] == UInt8(ascii: ":")
        else { return false }
        let key = bytes[at]
        at += 3
        let good: Bool
        switch key {
        case UInt8(ascii: "s"): good = plainString()
        case UInt8(ascii: "i"): good = scalar { $0.integer() }
        case UInt8(ascii: "b"): good = scalar { $0.boolean() }
        case UInt8(ascii: "d"), UInt8(ascii: "t"): good = scalar { $0.double() }
        default: good = false
        }
        return good && take(UInt8(ascii: "}"))
    }

    /// One scalar, read by `StoredFieldsReader` itself from here: numbers and booleans are
    /// checked by the very code that will read them (their reading makes no heap object).
    // Inlined: a first sync checks a field per record, and the call through the closure cost
    // about 2% of it (`bench --only sync`, side by side with the copied grammar).
    @inline(__always)
    private mutating func scalar<T>(_ read: (inout StoredFieldsReader) -> T?) -> Bool {
        var reader = StoredFieldsReader(bytes: bytes, at: at)
        guard read(&reader) != nil else { return false }
        at = reader.at
        return true
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
