import Foundation

/// Writes an answer's JSON: the strings, integers, booleans, arrays and dictionaries answers
/// are made of, byte by byte, and any other value (a double, an `NSNumber` from a parsed body,
/// an optional) through `JSONSerialization`, the writer answers used before.
///
/// corelibs' `JSONSerialization` casts every value to `[AnyHashable: Any?]`, `[Any?]` or
/// `NSNumber` to find its type; for a share's metadata with 64 participants that cost more
/// than reading the share. Here a value's type is told by its exact dynamic type, so an
/// `NSNumber` holding `true` is never mistaken for the integer 1 (on Linux `as? Int` takes it);
/// each value is written as JSONSerialization writes it (`WireJSONTests`); only the order of
/// an object's keys may differ, which JSON leaves open.
enum WireJSON {
    /// A value not even `JSONSerialization` can write (NaN, an object of no JSON type).
    struct Unwritable: Error {}

    static func bytes(_ object: WireFormat.Object) throws -> [UInt8] {
        var out: [UInt8] = []
        // A share's metadata is about 2–3 KB: one allocation for most answers.
        out.reserveCapacity(4096)
        try write(object: object, into: &out)
        return out
    }

    /// `value` written by its exact type, the existential opened (`T` is the value's dynamic
    /// type): each check compares two metadata pointers and each value is taken as the type
    /// just compared, so no runtime cast (`swift_dynamicCast`) and no boxing is asked per value
    /// — they were a fifth of an answer's cost.
    private static func write<T>(_ value: T, into out: inout [UInt8]) throws {
        if T.self == String.self {
            write(string: unsafeBitCast(value, to: String.self), into: &out)
        } else if T.self == WireFormat.Object.self {
            try write(object: unsafeBitCast(value, to: WireFormat.Object.self), into: &out)
        } else if T.self == [Any].self {
            try write(array: unsafeBitCast(value, to: [Any].self), into: &out)
        } else if T.self == Int.self {
            write(integer: Int64(unsafeBitCast(value, to: Int.self)), into: &out)
        } else if T.self == Int64.self {
            write(integer: unsafeBitCast(value, to: Int64.self), into: &out)
        } else if T.self == Bool.self {
            out.append(contentsOf: unsafeBitCast(value, to: Bool.self) ? "true".utf8 : "false".utf8)
        } else if T.self == [String: String].self {
            try write(strings: unsafeBitCast(value, to: [String: String].self), into: &out)
        } else if T.self == [String].self {
            out.append(UInt8(ascii: "["))
            for (n, item) in unsafeBitCast(value, to: [String].self).enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                write(string: item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        } else if T.self == [WireFormat.Object].self {
            out.append(UInt8(ascii: "["))
            for (n, item) in unsafeBitCast(value, to: [WireFormat.Object].self).enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                try write(object: item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        } else if let optional = value as? any WireOptional {
            // As JSONSerialization writes one inside a container: its value, or null.
            if let wrapped = optional.wrapped { try write(any: wrapped, into: &out) } else { out.append(contentsOf: "null".utf8) }
        } else {
            // Doubles, NSNumbers, NSNull…: rare in answers, written as before.
            guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes]) else {
                throw Unwritable()
            }
            out.append(contentsOf: data)
        }
    }

    /// `value` opened to its dynamic type for the generic `write` (`Any` is not opened
    /// implicitly: `T` would be `Any` itself, the value boxed again).
    private static func write(any value: Any, into out: inout [UInt8]) throws {
        func opened<T>(_ value: T) throws { try write(value, into: &out) }
        try _openExistential(value, do: opened)
    }

    private static func write(array: [Any], into out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "["))
        for (n, item) in array.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            try write(any: item, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func write(object: WireFormat.Object, into out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in object {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            write(string: key, into: &out)
            out.append(UInt8(ascii: ":"))
            try write(any: value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func write(strings object: [String: String], into out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in object {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            write(string: key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(string: value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func write(integer: Int64, into out: inout [UInt8]) {
        if integer < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = integer.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits, written backwards
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            let end = buffer.count
            repeat {
                buffer[end - 1 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            out.append(contentsOf: buffer[(end - count)..<end])
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A string as JSONSerialization writes it (slashes as they are): `"` and `\` escaped,
    /// control characters as `\b \t \n \f \r` or `\u00XX`, everything else as its UTF-8.
    private static func write(string: String, into out: inout [UInt8]) {
        // A long string (a big field) goes through JSONSerialization's compiled scan: this
        // byte loop, unoptimized in debug and sanitizer builds, took seconds over megabytes.
        if string.utf8.count > 4096,
            let data = try? JSONSerialization.data(withJSONObject: string, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        {
            out.append(contentsOf: data)
            return
        }
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            var clean = 0  // start of the run of bytes needing no escape
            // An index loop: through `enumerated()` and `where` each byte cost about 15
            // instructions, and an answer's strings are most of its bytes.
            var i = 0
            while i < bytes.count {
                let byte = bytes[i]
                i += 1
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean..<(i - 1)]))
                clean = i
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                default: out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// An optional of any type, seen through `Any`.
private protocol WireOptional { var wrapped: Any? { get } }

extension Optional: WireOptional {
    fileprivate var wrapped: Any? { self.map { $0 } }
}
