import Foundation

/// The directory of accounts (the "iCloud accounts"), administered from the engine.
///
/// ```swift
/// let alice = try engine.accounts.create(emails: ["alice@example.com"], phones: ["+1 415 555 0100"],
///                                        name: NameComponents(givenName: "Alice"), discoverable: true)
/// ```
public struct Directory {
    let engine: Engine

    /// Creates an account with a new user record ID and these emails and phones, normalised (R1);
    /// `discoverable` makes its discoverability `granted` (R19), else it is `initialState`.
    ///
    /// Throws `invalidArguments` for no address at all, a malformed one, or one another account has.
    @discardableResult
    public func create(
        emails: [String] = [],
        phones: [String] = [],
        name: NameComponents = NameComponents(),
        discoverable: Bool = false
    ) throws -> Account {
        let emails = try emails.map(LookupInfo.normalizedEmail)
        let phones = try phones.map(LookupInfo.normalizedPhone)
        guard !emails.isEmpty || !phones.isEmpty else {
            throw ShareFlowError.invalid("an account needs at least one email address or phone number")
        }
        // Before and after, as every change to the directory: nothing read while the write is
        // under way looks current once it has committed.
        engine.accountsChanged()
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            let id = try db.insertAccount(
                userRecordID: Account.newUserRecordID(),
                name: name,
                discoverability: discoverable ? .granted : .initialState,
                at: EngineClock.seconds
            )
            for email in emails { try insertAddress(.emailAddress(email), account: id, db: db) }
            for phone in phones { try insertAddress(.phoneNumber(phone), account: id, db: db) }
            return try engine.loadAccount(id: id, db: db)
        }
    }

    /// By email, phone or user record ID (a string starting with `_`), as `sf.as(who)` takes.
    public func find(_ who: String) throws -> Account? {
        let trimmed = who.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("_") { return try find(LookupInfo(userRecordID: trimmed)) }
        if trimmed.contains("@") { return try find(LookupInfo(emailAddress: trimmed)) }
        return try find(LookupInfo(phoneNumber: trimmed))
    }

    /// The account behind `lookup`, or nil when no account has it.
    public func find(_ lookup: LookupInfo) throws -> Account? {
        try engine.reading { db in
            try engine.accountID(for: lookup, db: db).map { try engine.loadAccount(id: $0, db: db) }
        }
    }

    /// By the account's row ID, as stored credentials name it.
    package func account(id: Int64) throws -> Account? {
        try engine.reading { try $0.account(id: id) }
    }

    /// The account with this user record ID, or nil; `invalidArguments` for an empty one.
    public func get(userRecordID: String) throws -> Account? {
        try find(LookupInfo(userRecordID: userRecordID))
    }

    /// Every account, oldest first.
    public func list() throws -> [Account] {
        try engine.reading { db in
            try db.accountIDs().map { try engine.loadAccount(id: $0, db: db) }
        }
    }

    /// How many accounts the directory holds.
    public func count() throws -> Int {
        try engine.reading { try $0.accountCount() }
    }

    /// Adds an email; pending participants invited at that address become this account's (R17).
    @discardableResult
    public func addEmail(_ email: String, to account: Account) throws -> Account {
        try addAddress(LookupInfo(emailAddress: email), to: account)
    }

    /// Adds a phone number; pending participants invited at that number become this account's (R17).
    @discardableResult
    public func addPhone(_ phone: String, to account: Account) throws -> Account {
        try addAddress(LookupInfo(phoneNumber: phone), to: account)
    }

    private func addAddress(_ address: LookupInfo, to account: Account) throws -> Account {
        try change(account) { db in try insertAddress(address, account: account.id, db: db) }
    }

    /// A change to `account` in the directory, and the account as stored after it. The
    /// directory's generation moves before and after (R28: account objects read after it show
    /// it; nothing read while the write is under way looks current once it has committed).
    private func change(_ account: Account, _ write: (StoreTransaction) throws -> Void) throws -> Account {
        engine.accountsChanged()
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            try write(db)
            return try engine.loadAccount(id: account.id, db: db)
        }
    }

    /// Sets the account's discoverability: only `granted` is found by discovery (R19, R20) and shows
    /// the account's name to others (R2). Returns the account as stored now.
    @discardableResult
    public func setDiscoverability(_ value: Discoverability, of account: Account) throws -> Account {
        try change(account) { db in try db.setDiscoverability(value, of: account.id) }
    }

    /// Sets the account's name, which others see while it is discoverable (R2). Returns the account as
    /// stored now.
    @discardableResult
    public func setName(_ name: NameComponents, of account: Account) throws -> Account {
        try change(account) { db in try db.setName(name, of: account.id) }
    }

    /// Adds address-book entries (emails or phones) used by discovery (R19). An entry without
    /// an identifier gets one.
    @discardableResult
    public func addContacts(_ contacts: [(value: String, identifier: String?)], to account: Account) throws -> Account {
        let parsed = try contacts.map { c -> (LookupInfo, String?) in
            (c.value.contains("@") ? try LookupInfo(emailAddress: c.value) : try LookupInfo(phoneNumber: c.value), c.identifier)
        }
        return try change(account) { db in
            try db.insertContacts(
                parsed.map { lookup, identifier in
                    (lookup, identifier ?? "contact-" + RandomIdentifier.uuidString().prefix(8).lowercased())
                },
                account: account.id
            )
        }
    }

    // MARK: Addresses

    /// Adds a normalised email or phone to an account, then verifies matching invitations (R17).
    private func insertAddress(_ address: LookupInfo, account: Int64, db: StoreTransaction) throws {
        let noun: String
        switch address {
        case .emailAddress: noun = "email"
        case .phoneNumber: noun = "phone"
        case .userRecordID: throw ShareFlowError.invalid("a userRecordID is not an address to add")
        }
        if let owner = try engine.accountID(for: address, db: db) {
            if owner == account { return }
            throw ShareFlowError.invalid("\(noun) '\(address.value)' already belongs to another account")
        }
        try db.insertAddress(address, account: account)
        // R17: participants invited by this address, not yet matched to an account, become this account's.
        try db.matchPendingParticipants(address, account: account)
    }
}

extension Engine {
    func accountID(for lookup: LookupInfo, db: StoreTransaction) throws -> Int64? { try db.accountID(for: lookup) }

    func loadAccount(id: Int64, db: StoreTransaction) throws -> Account {
        if id == Account.publicReader.id { return .publicReader }
        guard let account = try db.account(id: id) else { throw ShareFlowError.unknown("no account with id \(id)") }
        return account
    }
}
