/// A person's name parts, as `PersonNameComponents`.
public struct NameComponents: Hashable, Sendable, Codable {
    public var namePrefix: String?
    public var givenName: String?
    public var middleName: String?
    public var familyName: String?
    public var nameSuffix: String?
    public var nickname: String?

    public init(namePrefix: String? = nil, givenName: String? = nil, middleName: String? = nil,
                familyName: String? = nil, nameSuffix: String? = nil, nickname: String? = nil) {
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

/// Whether an account lets others find it by email or phone (CKContainer.ApplicationPermissionStatus).
public enum Discoverability: String, Sendable, CaseIterable {
    case initialState, granted, denied, couldNotComplete
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

    public init(userRecordID: String?, lookupInfo: LookupInfo?, nameComponents: NameComponents?,
                hasiCloudAccount: Bool, contactIdentifiers: [String] = []) {
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
