import Foundation

/// How an account shows to others (R2), from the whole `Account` or from the one row a
/// participant or an owner needs (`AccountIdentityRow`): the same rules for both.
extension AccountIdentityRow {
    /// The public reader has no row (R30).
    static let publicReader = AccountIdentityRow(Account.publicReader)

    init(_ account: Account) {
        self.init(
            id: account.id,
            userRecordID: account.userRecordID,
            name: account.name,
            discoverability: account.discoverability,
            email: account.email,
            phone: account.phones.first
        )
    }

    /// The identity others see for this account, found through `lookupInfo` (else its first
    /// email or phone); its name only where R2 reveals it.
    func identity(lookupInfo: LookupInfo?, contactIdentifiers: [String] = []) -> UserIdentity {
        UserIdentity(
            userRecordID: userRecordID,
            lookupInfo: lookupInfo ?? email.map { .emailAddress($0) } ?? phone.map { .phoneNumber($0) },
            nameComponents: discoverability == .granted ? name : nil,
            hasiCloudAccount: true,
            contactIdentifiers: contactIdentifiers
        )
    }

    /// How the account is named on its own participant row.
    var primaryLookup: LookupInfo {
        if let email { return .emailAddress(email) }
        if let phone { return .phoneNumber(phone) }
        return .userRecordID(userRecordID)
    }
}

extension Account {
    /// The identity others see for this account, found through `lookupInfo`.
    func identity(lookupInfo: LookupInfo?, contactIdentifiers: [String] = []) -> UserIdentity {
        AccountIdentityRow(self).identity(lookupInfo: lookupInfo, contactIdentifiers: contactIdentifiers)
    }

    /// How the account is named on its own participant row.
    var primaryLookup: LookupInfo { AccountIdentityRow(self).primaryLookup }
}

/// What the engine's reads need of their caller: who it is (its row and user record name) and
/// what to call it in a message. A whole `Account` will do, and so will its one identity row
/// (`accountIdentity(id:)`, one statement where `loadAccount` reads four).
protocol CallerKey {
    var id: Int64 { get }
    var userRecordID: String { get }
    var email: String? { get }
}

extension Account: CallerKey {}

/// A caller known by its row and user record name only, for a read that says nothing of its
/// addresses (`Engine.ownRecord`: a record that is not a share).
struct CallerName: CallerKey {
    let id: Int64
    let userRecordID: String
    var email: String? { nil }
}
extension AccountIdentityRow: CallerKey {}

extension Engine {
    /// What others see of account `id`, in one statement (`loadAccount` reads four, contacts
    /// included). As `loadAccount`: the public reader for its ID, unknownItem for an ID no
    /// account has.
    func accountIdentity(id: Int64, db: StoreTransaction) throws -> AccountIdentityRow {
        if id == Account.publicReader.id { return .publicReader }
        guard let found = try db.accountIdentity(id: id) else { throw ShareFlowError.unknown("no account with id \(id)") }
        return found
    }
}
