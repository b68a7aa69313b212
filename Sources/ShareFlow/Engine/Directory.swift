import Foundation
import GRDB

/// The directory of accounts (the "iCloud accounts"), administered from the engine.
///
/// ```swift
/// let alice = try engine.accounts.create(emails: ["alice@example.com"], phones: ["+1 415 555 0100"],
///                                        name: NameComponents(givenName: "Alice"), discoverable: true)
/// ```
public struct Directory {
    let engine: Engine

    @discardableResult
    public func create(emails: [String] = [], phones: [String] = [], name: NameComponents = NameComponents(),
                       discoverable: Bool = false) throws -> Account {
        let emails = try emails.map(LookupInfo.normalizedEmail)
        let phones = try phones.map(LookupInfo.normalizedPhone)
        guard !emails.isEmpty || !phones.isEmpty else {
            throw ShareFlowError.invalid("an account needs at least one email address or phone number")
        }
        engine.accountsChanged()
        return try engine.transaction { db in
            let userRecordID = Account.newUserRecordID()
            let nameJSON = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
            try db.execute(sql: "INSERT INTO account (userRecordID, name, discoverability, createdAt) VALUES (?, ?, ?, ?)",
                           arguments: [userRecordID, nameJSON, (discoverable ? Discoverability.granted : .initialState).rawValue,
                                       Date().timeIntervalSince1970])
            let id = db.lastInsertedRowID
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

    public func find(_ lookup: LookupInfo) throws -> Account? {
        try engine.reading { db in
            try engine.accountID(for: lookup, db: db).map { try engine.loadAccount(id: $0, db: db) }
        }
    }

    public func get(userRecordID: String) throws -> Account? {
        try find(LookupInfo(userRecordID: userRecordID))
    }

    public func list() throws -> [Account] {
        try engine.reading { db in
            try Int64.fetchAll(db.cachedStatement(sql: "SELECT id FROM account ORDER BY id")).map { try engine.loadAccount(id: $0, db: db) }
        }
    }

    public func count() throws -> Int {
        try engine.reading { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM account") ?? 0 }
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
        engine.accountsChanged()
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            try insertAddress(address, account: account.id, db: db)
            return try engine.loadAccount(id: account.id, db: db)
        }
    }

    @discardableResult
    public func setDiscoverability(_ value: Discoverability, of account: Account) throws -> Account {
        // R28: account objects read after this show it.
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            try db.execute(sql: "UPDATE account SET discoverability = ? WHERE id = ?", arguments: [value.rawValue, account.id])
            return try engine.loadAccount(id: account.id, db: db)
        }
    }

    @discardableResult
    public func setName(_ name: NameComponents, of account: Account) throws -> Account {
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            let json = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
            try db.execute(sql: "UPDATE account SET name = ? WHERE id = ?", arguments: [json, account.id])
            return try engine.loadAccount(id: account.id, db: db)
        }
    }

    /// Adds address-book entries (emails or phones) used by discovery (R19). An entry without
    /// an identifier gets one.
    @discardableResult
    public func addContacts(_ contacts: [(value: String, identifier: String?)], to account: Account) throws -> Account {
        let parsed = try contacts.map { c -> (LookupInfo, String?) in
            (c.value.contains("@") ? try LookupInfo(emailAddress: c.value) : try LookupInfo(phoneNumber: c.value), c.identifier)
        }
        engine.accountsChanged()
        defer { engine.accountsChanged() }
        return try engine.transaction { db in
            for (lookup, identifier) in parsed {
                let id = identifier ?? "contact-" + RandomIdentifier.uuidString().prefix(8).lowercased()
                try db.execute(sql: "INSERT INTO contact (accountID, kind, value, contactIdentifier) VALUES (?, ?, ?, ?)",
                               arguments: [account.id, lookup.kind, lookup.value, id])
            }
            return try engine.loadAccount(id: account.id, db: db)
        }
    }

    // MARK: Addresses

    /// Adds a normalised email or phone to an account, then verifies matching invitations (R17).
    private func insertAddress(_ address: LookupInfo, account: Int64, db: Database) throws {
        let (table, column, noun): (String, String, String)
        switch address {
        case .emailAddress: (table, column, noun) = ("account_email", "email", "email")
        case .phoneNumber: (table, column, noun) = ("account_phone", "phone", "phone")
        case .userRecordID: throw ShareFlowError.invalid("a userRecordID is not an address to add")
        }
        if let owner = try engine.accountID(for: address, db: db) {
            if owner == account { return }
            throw ShareFlowError.invalid("\(noun) '\(address.value)' already belongs to another account")
        }
        let position = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM \(table) WHERE accountID = ?"), arguments: [account]) ?? 0
        try db.execute(sql: "INSERT INTO \(table) (\(column), accountID, position) VALUES (?, ?, ?)",
                       arguments: [address.value, account, position])
        try matchPendingParticipants(address, account: account, db: db)
    }

    /// R17: participants invited by this address, not yet matched to an account, become this
    /// account's.
    private func matchPendingParticipants(_ lookup: LookupInfo, account: Int64, db: Database) throws {
        try db.execute(sql: """
            UPDATE participant SET accountID = ?
            WHERE lookupKind = ? AND lookupValue = ? AND accountID IS NULL AND status = 'pending'
            """, arguments: [account, lookup.kind, lookup.value])
    }
}

extension Engine {
    func accountID(for lookup: LookupInfo, db: Database) throws -> Int64? {
        switch lookup {
        case .emailAddress(let e):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT accountID FROM account_email WHERE email = ?"), arguments: [e])
        case .phoneNumber(let p):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT accountID FROM account_phone WHERE phone = ?"), arguments: [p])
        case .userRecordID(let u):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM account WHERE userRecordID = ?"), arguments: [u])
        }
    }

    func loadAccount(id: Int64, db: Database) throws -> Account {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT userRecordID, name, discoverability FROM account WHERE id = ?"), arguments: [id]) else {
            throw ShareFlowError.unknown("no account with id \(id)")
        }
        let nameJSON: String = row["name"]
        let name = NameComponents(storedJSON: nameJSON)
        let emails = try String.fetchAll(db.cachedStatement(sql: "SELECT email FROM account_email WHERE accountID = ? ORDER BY position"), arguments: [id])
        let phones = try String.fetchAll(db.cachedStatement(sql: "SELECT phone FROM account_phone WHERE accountID = ? ORDER BY position"), arguments: [id])
        let contacts = try Row.fetchAll(db.cachedStatement(sql: "SELECT kind, value, contactIdentifier FROM contact WHERE accountID = ? ORDER BY id"), arguments: [id])
            .map { Account.Contact(lookupInfo: LookupInfo(kind: $0["kind"], value: $0["value"]), contactIdentifier: $0["contactIdentifier"]) }
        return Account(id: id, userRecordID: row["userRecordID"], emails: emails, phones: phones, name: name,
                       discoverability: Discoverability(rawValue: row["discoverability"]) ?? .initialState,
                       contacts: contacts)
    }
}
