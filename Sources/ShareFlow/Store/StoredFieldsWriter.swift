import Foundation

/// Writes a record's fields in ShareFlow's stored form (`StoredFields`) without `JSONEncoder`,
/// whose generic `Encodable` machinery (a keyed container and a boxed value per field) cost more
/// than the rest of a record's save.
///
/// It writes what `JSONEncoder` writes, byte for byte in length (a record's stored size counts
/// against R22's limit, so the two must never disagree on it): strings escaped as the encoder
/// escapes them (`"`, `\`, `/`, control characters), integers, booleans, bytes in base64,
/// references and lists of those. A number with a fraction (a double, a date, a location) is
/// the encoder's to spell: for fields holding one, `write` returns nil and the caller encodes
/// with `JSONEncoder`. `StoredFieldsWriterTests` holds the two together on every value type.
enum StoredFieldsWriter {
    static func write(_ fields: [String: FieldValue]) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(64 * fields.count + 2)
        out.append(UInt8(ascii: "{"))
        var first = true
        for (name, value) in fields {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(name, into: &out)
            out.append(UInt8(ascii: ":"))
            guard self.value(value, into: &out) else { return nil }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// One value, the object `FieldValue.encode(to:)` makes of it; false for one with a fraction.
    private static func value(_ value: FieldValue, into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "{"))
        defer { out.append(UInt8(ascii: "}")) }
        switch value {
        case .string(let s):
            key("s", into: &out)
            string(s, into: &out)
        case .integer(let i):
            key("i", into: &out)
            out.append(contentsOf: String(i).utf8)
        case .boolean(let b):
            key("b", into: &out)
            out.append(contentsOf: (b ? "true" : "false").utf8)
        case .bytes(let d):
            key("y", into: &out)
            string(d.base64EncodedString(), into: &out)
        case .reference(let id, let action):
            key("r", into: &out)
            string(id.recordName, into: &out)
            out.append(contentsOf: ",\"z\":".utf8)
            string(id.zoneID.zoneName, into: &out)
            out.append(contentsOf: ",\"o\":".utf8)
            string(id.zoneID.ownerName, into: &out)
            if action != .none {
                out.append(contentsOf: ",\"a\":".utf8)
                string(action.rawValue, into: &out)
            }
        case .list(let items):
            key("l", into: &out)
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                guard self.value(item, into: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
            return true
        case .double, .date, .location:
            return false
        case .asset(let a):
            // Only a saved asset is stored; the encoder names any other.
            guard case .stored(let sum, let size) = a.content else { return false }
            key("f", into: &out)
            string(sum, into: &out)
            out.append(contentsOf: ",\"n\":".utf8)
            out.append(contentsOf: String(size).utf8)
        case .encrypted(let inner):
            key("e", into: &out)
            return self.value(inner, into: &out)
        }
        return true
    }

    /// A value's first key: `"k":`.
    private static func key(_ k: StaticString, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        out.append(contentsOf: "\":".utf8)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string as JSONEncoder writes it: `"`, `\` and `/` escaped with a backslash,
    /// the usual control characters by name, the others as `\u00XX`; everything else as is.
    /// `escapingSlash` false: `/` as is (the decision log's JSON, `JSONText`).
    static func string(_ s: String, into out: inout [UInt8], escapingSlash: Bool = true) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case UInt8(ascii: "/") where escapingSlash: out.append(contentsOf: [0x5C, 0x2F])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
