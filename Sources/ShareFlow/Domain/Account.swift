import Foundation

/// An account of the directory (an "iCloud account"), as stored.
///
/// ```swift
/// let alice = try engine.accounts.create(emails: ["Alice@Example.com"], discoverable: true)
/// print(alice.email!)                          // alice@example.com (R1)
/// let container = try engine.session(for: alice).container("iCloud.com.example.app")
/// ```
public struct Account: Hashable, Sendable, CustomStringConvertible {
    /// Row ID in the store.
    public let id: Int64
    /// Opaque, `_` and 32 hex digits.
    public let userRecordID: String
    /// Normalised (R1); the first is the primary one.
    public var emails: [String]
    /// Normalised to E.164 (R1).
    public var phones: [String]
    /// Shown to others only while the account is discoverable (R2).
    public var name: NameComponents
    /// Whether others may find the account by email or phone, and see its name (R2, R19).
    public var discoverability: Discoverability
    /// The address book discovery searches (R19).
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

    /// The primary email address; nil for an account with none.
    public var email: String? { emails.first }
    /// Whether discoverability is `granted` (R2, R19).
    public var isDiscoverable: Bool { discoverability == .granted }

    /// An entry of the account's address book, used by discovery (R19).
    public struct Contact: Hashable, Sendable {
        /// The entry's email address or phone number, normalised (R1).
        public var lookupInfo: LookupInfo
        /// The address book's ID for the entry, handed back in a discovered identity's `contactIdentifiers`.
        public var contactIdentifier: String
    }

    /// Name, primary email (else first phone) and user record ID, for logs.
    public var description: String {
        let who = [name.formatted, email ?? phones.first ?? ""].filter { !$0.isEmpty }.joined(separator: " ")
        return "Account(\(who), \(userRecordID)\(isDiscoverable ? ", discoverable" : ""))"
    }

    static func newUserRecordID() -> String {
        "_" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
