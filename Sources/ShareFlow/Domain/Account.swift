import Foundation

/// An account of the directory (an "iCloud account"), as stored.
public struct Account: Hashable, Sendable, CustomStringConvertible {
    /// Row ID in the store.
    public let id: Int64
    /// Opaque, `_` and 32 hex digits.
    public let userRecordID: String
    /// Normalised (R1); the first is the primary one.
    public var emails: [String]
    public var phones: [String]
    public var name: NameComponents
    public var discoverability: Discoverability
    public var contacts: [Contact]

    /// R30: who reads the public database for a visitor who is not signed in (a web page
    /// showing public content with the API token alone). No row of the store (row IDs start at
    /// 1); it reads the public database and writes nothing.
    public static let publicReader = Account(id: 0, userRecordID: "_publicReader", emails: [], phones: [], name: NameComponents(),
                                             discoverability: .denied, contacts: [])

    public var email: String? { emails.first }
    public var isDiscoverable: Bool { discoverability == .granted }

    /// An entry of the account's address book, used by discovery (R19).
    public struct Contact: Hashable, Sendable {
        public var lookupInfo: LookupInfo
        public var contactIdentifier: String
    }

    public var description: String {
        let who = [name.formatted, email ?? phones.first ?? ""].filter { !$0.isEmpty }.joined(separator: " ")
        return "Account(\(who), \(userRecordID)\(isDiscoverable ? ", discoverable" : ""))"
    }

    /// The identity others see for this account, found through `lookupInfo`.
    func identity(lookupInfo: LookupInfo?, contactIdentifiers: [String] = []) -> UserIdentity {
        UserIdentity(userRecordID: userRecordID,
                     lookupInfo: lookupInfo ?? email.map { .emailAddress($0) } ?? phones.first.map { .phoneNumber($0) },
                     nameComponents: isDiscoverable ? name : nil,
                     hasiCloudAccount: true, contactIdentifiers: contactIdentifiers)
    }

    static func newUserRecordID() -> String {
        "_" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// How the account is named on its own participant row.
    var primaryLookup: LookupInfo {
        if let e = email { return .emailAddress(e) }
        if let p = phones.first { return .phoneNumber(p) }
        return .userRecordID(userRecordID)
    }
}
