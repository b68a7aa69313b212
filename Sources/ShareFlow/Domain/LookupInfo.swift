import Foundation

/// How to find a user: exactly one of an email address, a phone number or a user record ID (R1).
///
/// ```swift
/// let info = try LookupInfo(emailAddress: " Bob@Example.com ")   // emailAddress == "bob@example.com"
/// let phone = try LookupInfo(phoneNumber: "+1 (415) 555-0101")    // phoneNumber == "+14155550101"
/// ```
public enum LookupInfo: Hashable, Sendable, CustomStringConvertible {
    /// An email address; `init(emailAddress:)` trims and lower-cases it (R1).
    case emailAddress(String)
    /// A phone number; `init(phoneNumber:)` makes it E.164 (R1).
    case phoneNumber(String)
    /// An account's user record ID.
    case userRecordID(String)

    /// An email address, normalised; `invalidArguments` naming it when malformed (R1).
    public init(emailAddress: String) throws { self = .emailAddress(try LookupInfo.normalizedEmail(emailAddress)) }
    /// A phone number, normalised to E.164; `invalidArguments` naming it when malformed (R1).
    public init(phoneNumber: String) throws { self = .phoneNumber(try LookupInfo.normalizedPhone(phoneNumber)) }
    /// A user record ID, trimmed; `invalidArguments` when empty or holding a NUL byte (R1, R23).
    public init(userRecordID: String) throws {
        let id = userRecordID.trimmingCharacters(in: .whitespaces)
        try Naming.check(text: id, "userRecordID")
        guard !id.isEmpty else { throw ShareFlowError.invalid("userRecordID must not be empty (R1)") }
        self = .userRecordID(id)
    }

    /// From the three optional fields of a `LookupInfo{...}`: exactly one must be set (R1).
    public init(emailAddress: String?, phoneNumber: String?, userRecordID: String?) throws {
        let set = [emailAddress, phoneNumber, userRecordID].compactMap { $0 }
        guard set.count == 1 else {
            throw ShareFlowError.invalid("a LookupInfo holds exactly one of emailAddress, phoneNumber, userRecordID; got \(set.count) (R1)")
        }
        if let e = emailAddress {
            try self.init(emailAddress: e)
        } else if let p = phoneNumber {
            try self.init(phoneNumber: p)
        } else {
            try self.init(userRecordID: userRecordID!)
        }
    }

    /// The email address; nil for another kind.
    public var emailAddress: String? {
        if case .emailAddress(let v) = self { return v }
        return nil
    }
    /// The phone number; nil for another kind.
    public var phoneNumber: String? {
        if case .phoneNumber(let v) = self { return v }
        return nil
    }
    /// The user record ID; nil for another kind.
    public var userRecordID: String? {
        if case .userRecordID(let v) = self { return v }
        return nil
    }

    /// Stored form: kind and value.
    public var kind: String { staticKind.description }

    /// The kind as a literal (bindings use it as a field name without copying).
    public var staticKind: StaticString {
        switch self {
        case .emailAddress: return "emailAddress"
        case .phoneNumber: return "phoneNumber"
        case .userRecordID: return "userRecordID"
        }
    }

    /// The email address, phone number or user record ID held, without its kind.
    public var value: String {
        switch self {
        case .emailAddress(let v), .phoneNumber(let v), .userRecordID(let v): return v
        }
    }

    init(kind: String, value: String) {
        switch kind {
        case "emailAddress": self = .emailAddress(value)
        case "phoneNumber": self = .phoneNumber(value)
        default: self = .userRecordID(value)
        }
    }

    /// The ID of this item in a `partialErrors` table.
    public var description: String { value }

    /// The longest email address accepted, in bytes (RFC 5321).
    public static let maxEmailBytes = 254
    /// The longest phone number accepted, in bytes, its separators included.
    public static let maxPhoneBytes = 64

    /// R1: trimmed, lower-cased, one `@` with text on both sides and a dot in the domain.
    public static func normalizedEmail(_ raw: String) throws -> String {
        // RFC 5321: a path holds at most 254 characters; checked first, so a megabyte of
        // "address" costs nothing and is not repeated in the error (or an audit log).
        guard raw.utf8.count <= maxEmailBytes else {
            throw ShareFlowError.invalid("an email address of \(raw.utf8.count) bytes is not valid; at most \(maxEmailBytes) (R1)")
        }
        try Naming.check(text: raw, "email address")
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.contains(where: { $0.isWhitespace || $0 == "," || $0 == ";" || $0 == "<" || $0 == ">" })
        else {
            throw ShareFlowError.invalid("'\(Naming.printable(raw))' is not a valid email address (R1)")
        }
        return email
    }

    /// R1: E.164 — `+` and 7 to 15 digits; spaces, dashes, dots and parentheses are removed.
    public static func normalizedPhone(_ raw: String) throws -> String {
        guard raw.utf8.count <= maxPhoneBytes else {
            throw ShareFlowError.invalid("a phone number of \(raw.utf8.count) bytes is not valid; at most \(maxPhoneBytes) (R1)")
        }
        try Naming.check(text: raw, "phone number")
        let kept = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            .filter { !" -.()".contains($0) }
        let digits = kept.dropFirst()
        guard kept.first == "+", (7...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw ShareFlowError.invalid("'\(Naming.printable(raw))' is not a valid phone number: E.164 needs '+' and 7 to 15 digits (R1)")
        }
        return kept
    }
}
