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
    public static let publicReader = Account(
        id: 0,
        userRecordID: "_publicReader",
        emails: [],
        phones: [],
        name: NameComponents(),
        discoverability: .denied,
        contacts: []
    )

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

    static func newUserRecordID() -> String {
        "_" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
