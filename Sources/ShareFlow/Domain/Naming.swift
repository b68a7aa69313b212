/// What names and identifiers may be (R23): record types and field keys are letters, digits and
/// `_`, starting with a letter; record names are 1–255 ASCII characters; no identifier, email,
/// phone, zone or container name holds a NUL byte (SQLite and C would cut it there, and
/// `a@x.com\0.evil.org` would be `a@x.com`).
///
/// ```swift
/// try Naming.check(recordType: "Trip")          // fine
/// try Naming.check(fieldKey: "2nd")              // invalidArguments: starts with a digit
/// ```
public enum Naming {
    /// The longest record name, record type or field key, in bytes (R23).
    public static let maxLength = 255

    /// Why `name` cannot be a record name (empty, over `maxLength` bytes, or not printable ASCII), or nil when it can (R23).
    public static func problem(recordName name: String) -> String? {
        guard !name.isEmpty else { return "an empty record name" }
        guard name.utf8.count <= maxLength else { return "a record name of \(name.utf8.count) bytes; at most \(maxLength)" }
        guard name.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return "record name '\(printable(name))': only printable ASCII characters"
        }
        return nil
    }

    /// Throws `invalidArguments` naming the problem when `name` cannot be a record name (R23).
    public static func check(recordName name: String) throws {
        if let p = problem(recordName: name) { throw ShareFlowError.invalid("\(p) (R23)") }
    }

    /// Throws `invalidArguments` unless `type` is letters, digits and `_`, starting with a letter, at most `maxLength` bytes (R23).
    public static func check(recordType type: String) throws {
        guard isSymbol(type) else {
            throw ShareFlowError.invalid(
                "record type '\(printable(type))': letters, digits and _, starting with a letter, at most \(maxLength) (R23)"
            )
        }
    }

    /// Throws `invalidArguments` unless `key` is letters, digits and `_`, starting with a letter, at most `maxLength` bytes (R23).
    public static func check(fieldKey key: String) throws {
        guard isSymbol(key) else {
            throw ShareFlowError.invalid("field key '\(printable(key))': letters, digits and _, starting with a letter, at most \(maxLength) (R23)")
        }
    }

    /// Refuses a NUL byte in `value`, named `what` in the error (R23). An empty value passes:
    /// callers that refuse one check it themselves.
    public static func check(text value: String, _ what: String) throws {
        guard !value.utf8.contains(0) else {
            throw ShareFlowError.invalid("\(what) '\(printable(value))' holds a NUL byte (R23)")
        }
    }

    static func isSymbol(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard let first = u.first, u.count <= maxLength, isLetter(first) else { return false }
        return u.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
    }

    private static func isLetter(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }

    /// `s` with control characters shown as `\u{…}`, so an error line stays one line.
    package static func printable(_ s: String) -> String {
        String(s.prefix(80).unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())
    }
}
