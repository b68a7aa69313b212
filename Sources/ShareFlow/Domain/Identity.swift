import Foundation

/// A person's name parts, as `PersonNameComponents`.
public struct NameComponents: Hashable, Sendable, Codable {
    public var namePrefix: String?
    public var givenName: String?
    public var middleName: String?
    public var familyName: String?
    public var nameSuffix: String?
    public var nickname: String?

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

    /// `{"key":"value",…}` with no escapes and only known keys, else nil.
    private static func flatObject(_ bytes: UnsafeBufferPointer<UInt8>) -> NameComponents? {
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
            switch String(decoding: key, as: UTF8.self) {
            case "namePrefix": name.namePrefix = value
            case "givenName": name.givenName = value
            case "middleName": name.middleName = value
            case "familyName": name.familyName = value
            case "nameSuffix": name.nameSuffix = value
            case "nickname": name.nickname = value
            default: return nil
            }
        } while expect(UInt8(ascii: ","))
        guard expect(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        return i == bytes.count ? name : nil
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
    public var lookupInfo: LookupInfo?
    /// Only when the account is discoverable.
    public var nameComponents: NameComponents?
    public var hasiCloudAccount: Bool
    public var contactIdentifiers: [String]

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

    public var description: String {
        var parts: [String] = []
        if let n = nameComponents, !n.isEmpty { parts.append(n.formatted) }
        if let l = lookupInfo { parts.append(l.value) }
        if parts.isEmpty, let id = userRecordID { parts.append(id) }
        if !hasiCloudAccount { parts.append("(no account)") }
        return parts.joined(separator: " ")
    }
}
