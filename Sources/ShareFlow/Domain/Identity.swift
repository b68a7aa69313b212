import Foundation

/// A person's name parts, as `PersonNameComponents`.
public struct NameComponents: Hashable, Sendable, Codable {
    /// Before the given name ("Dr.").
    public var namePrefix: String?
    /// The first name.
    public var givenName: String?
    /// Between the given and family names.
    public var middleName: String?
    /// The surname.
    public var familyName: String?
    /// After the family name ("Jr.").
    public var nameSuffix: String?
    /// What the person is called informally; not part of `formatted`.
    public var nickname: String?

    /// A name from its parts, each optional.
    public init(
        namePrefix: String? = nil,
        givenName: String? = nil,
        middleName: String? = nil,
        familyName: String? = nil,
        nameSuffix: String? = nil,
        nickname: String? = nil
    ) {
        self.namePrefix = namePrefix
        self.givenName = givenName
        self.middleName = middleName
        self.familyName = familyName
        self.nameSuffix = nameSuffix
        self.nickname = nickname
    }

    /// Whether `formatted` comes out empty (a nickname alone does not count).
    public var isEmpty: Bool { formatted.isEmpty }

    /// "Given Family", as a person reads it.
    public var formatted: String {
        [namePrefix, givenName, middleName, familyName, nameSuffix].compactMap { $0 }.joined(separator: " ")
    }
}

extension NameComponents {
    /// From the stored form: the JSON object `JSONEncoder` wrote. A flat object of plain strings
    /// (the common case) is read directly — `JSONDecoder` cost a third of a participant fetch;
    /// anything else (escapes, unknown keys) goes through `JSONDecoder`. Unreadable → empty.
    init(storedJSON json: String) {
        if let fast = NameComponents(flatJSON: json) {
            self = fast
            return
        }
        self = (try? JSONDecoder().decode(NameComponents.self, from: Data(json.utf8))) ?? NameComponents()
    }

    /// The name stored as `json` when it is the common flat object (`{}` included), read
    /// without a JSON decoder; nil for anything else (escapes, unknown keys, damage).
    init?(flatJSON json: String) {
        var json = json
        guard let fast = json.withUTF8(NameComponents.flatObject) else { return nil }
        self = fast
    }

    /// `{"key":"value",…}` with no escapes and only known keys, else nil. Read in place from a
    /// stored row's bytes (`StoredRow.name`): a 64-participant share reads 64 names.
    static func flatObject(_ bytes: UnsafeBufferPointer<UInt8>) -> NameComponents? {
        var i = 0
        func skipSpace() { while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x09 || bytes[i] == 0x0D { i += 1 } }
        func expect(_ c: UInt8) -> Bool {
            skipSpace()
            guard i < bytes.count, bytes[i] == c else { return false }
            i += 1
            return true
        }
        func string() -> UnsafeBufferPointer<UInt8>? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                if bytes[i] == UInt8(ascii: "\\") { return nil }
                i += 1
            }
            guard i < bytes.count else { return nil }
            i += 1
            return UnsafeBufferPointer(rebasing: bytes[start..<(i - 1)])
        }
        guard expect(UInt8(ascii: "{")) else { return nil }
        var name = NameComponents()
        if expect(UInt8(ascii: "}")) { return name }
        repeat {
            guard let key = string(), expect(UInt8(ascii: ":")), let raw = string() else { return nil }
            let value = String(decoding: raw, as: UTF8.self)
            // The key by its bytes (a switch over a new String compared each case's text).
            switch NameComponents.part(named: key) {
            case .namePrefix: name.namePrefix = value
            case .givenName: name.givenName = value
            case .middleName: name.middleName = value
            case .familyName: name.familyName = value
            case .nameSuffix: name.nameSuffix = value
            case .nickname: name.nickname = value
            case nil: return nil
            }
        } while expect(UInt8(ascii: ","))
        guard expect(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        return i == bytes.count ? name : nil
    }

    private enum Part { case namePrefix, givenName, middleName, familyName, nameSuffix, nickname }

    /// The part a stored name's key names, told by its length and a letter and then checked
    /// whole; nil for any other key.
    private static func part(named key: UnsafeBufferPointer<UInt8>) -> Part? {
        let (word, part): (StaticString, Part)
        switch (key.count, key.first, key.count > 4 ? key[4] : 0) {
        case (8, _, _): (word, part) = ("nickname", .nickname)
        case (9, _, _): (word, part) = ("givenName", .givenName)
        case (10, UInt8(ascii: "m"), _): (word, part) = ("middleName", .middleName)
        case (10, UInt8(ascii: "f"), _): (word, part) = ("familyName", .familyName)
        case (10, UInt8(ascii: "n"), UInt8(ascii: "P")): (word, part) = ("namePrefix", .namePrefix)
        case (10, UInt8(ascii: "n"), UInt8(ascii: "S")): (word, part) = ("nameSuffix", .nameSuffix)
        default: return nil
        }
        return word.withUTF8Buffer { memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 } ? part : nil
    }
}

/// Whether an account lets others find it by email or phone (CKContainer.ApplicationPermissionStatus).
public enum Discoverability: String, Sendable, CaseIterable {
    case initialState, granted, denied, couldNotComplete

    /// R2: an identity carries the account's name only when the account is discoverable.
    public var revealsName: Bool { self == .granted }
}

/// A user as others see them (R2).
public struct UserIdentity: Hashable, Sendable, CustomStringConvertible {
    /// Nil when no account matched the lookup info.
    public var userRecordID: String?
    /// The email, phone or user record ID the identity was found by, if any.
    public var lookupInfo: LookupInfo?
    /// Only when the account is discoverable.
    public var nameComponents: NameComponents?
    /// Whether an account matched; false for an invitation no account has verified yet (R17).
    public var hasiCloudAccount: Bool
    /// The caller's address-book entries that match this user (R19); empty outside discovery.
    public var contactIdentifiers: [String]

    /// An identity from its parts (R2).
    public init(
        userRecordID: String?,
        lookupInfo: LookupInfo?,
        nameComponents: NameComponents?,
        hasiCloudAccount: Bool,
        contactIdentifiers: [String] = []
    ) {
        self.userRecordID = userRecordID
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
        self.hasiCloudAccount = hasiCloudAccount
        self.contactIdentifiers = contactIdentifiers
    }

    /// Name and lookup value (the user record ID when neither is known), for logs.
    public var description: String {
        var parts: [String] = []
        if let n = nameComponents, !n.isEmpty { parts.append(n.formatted) }
        if let l = lookupInfo { parts.append(l.value) }
        if parts.isEmpty, let id = userRecordID { parts.append(id) }
        if !hasiCloudAccount { parts.append("(no account)") }
        return parts.joined(separator: " ")
    }
}
