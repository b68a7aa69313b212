import Foundation
import GRDB

/// Accounts, their addresses and contacts.
extension StoreTransaction {
    /// The statement behind FetchShareParticipants by email: the bench runs it through SQLite's
    /// C API as the baseline of SPEC §12.
    package static let identityByEmailSQL =
        "SELECT a.userRecordID, a.name, a.discoverability FROM account_email e JOIN account a ON a.id = e.accountID WHERE e.email = ?"

    package func accountID(for lookup: LookupInfo) throws -> Int64? {
        switch lookup {
        case .emailAddress(let e):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT accountID FROM account_email WHERE email = ?"), arguments: [e])
        case .phoneNumber(let p):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT accountID FROM account_phone WHERE phone = ?"), arguments: [p])
        case .userRecordID(let u):
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM account WHERE userRecordID = ?"), arguments: [u])
        }
    }

    package func account(id: Int64) throws -> Account? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT userRecordID, name, discoverability FROM account WHERE id = ?"), arguments: [id]) else {
            return nil
        }
        let nameJSON: String = row["name"]
        let emails = try String.fetchAll(db.cachedStatement(sql: "SELECT email FROM account_email WHERE accountID = ? ORDER BY position"), arguments: [id])
        let phones = try String.fetchAll(db.cachedStatement(sql: "SELECT phone FROM account_phone WHERE accountID = ? ORDER BY position"), arguments: [id])
        return Account(id: id, userRecordID: row["userRecordID"], emails: emails, phones: phones, name: NameComponents(storedJSON: nameJSON),
                       discoverability: Discoverability(rawValue: row["discoverability"]) ?? .initialState,
                       contacts: try contacts(of: id))
    }

    package func contacts(of account: Int64) throws -> [Account.Contact] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT kind, value, contactIdentifier FROM contact WHERE accountID = ? ORDER BY id"), arguments: [account])
            .map { Account.Contact(lookupInfo: LookupInfo(kind: $0["kind"], value: $0["value"]), contactIdentifier: $0["contactIdentifier"]) }
    }

    package func accountIDs() throws -> [Int64] {
        try Int64.fetchAll(db.cachedStatement(sql: "SELECT id FROM account ORDER BY id"))
    }

    package func accountCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM account")) ?? 0
    }

    /// The identity behind a lookup, in one indexed query with a cached statement (the hot
    /// path of FetchShareParticipants): its name only where R2 reveals it; nil when no account
    /// matches.
    package func identity(for lookup: LookupInfo) throws -> UserIdentity? {
        let sql: String
        switch lookup {
        case .emailAddress:
            sql = StoreTransaction.identityByEmailSQL
        case .phoneNumber:
            sql = "SELECT a.userRecordID, a.name, a.discoverability FROM account_phone p JOIN account a ON a.id = p.accountID WHERE p.phone = ?"
        case .userRecordID:
            sql = "SELECT userRecordID, name, discoverability FROM account WHERE userRecordID = ?"
        }
        let statement = try db.cachedStatement(sql: sql)
        statement.setUncheckedArguments([lookup.value])
        // A cursor's row reads the statement's columns in place (fetchOne copies the row
        // first); it is valid while the cursor lives.
        let cursor = try Row.fetchCursor(statement)
        return try withExtendedLifetime(cursor) { () -> UserIdentity? in
            guard let row = try cursor.next() else { return nil }
            var name: NameComponents?
            if Discoverability(rawValue: row[2] as String)?.revealsName == true {
                name = NameComponents(storedJSON: row[1])
            }
            return UserIdentity(userRecordID: row[0], lookupInfo: lookup, nameComponents: name, hasiCloudAccount: true)
        }
    }

    package func insertAccount(userRecordID: String, name: NameComponents, discoverability: Discoverability, at time: Double) throws -> Int64 {
        let nameJSON = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
        try db.execute(sql: "INSERT INTO account (userRecordID, name, discoverability, createdAt) VALUES (?, ?, ?, ?)",
                       arguments: [userRecordID, nameJSON, discoverability.rawValue, time])
        return db.lastInsertedRowID
    }

    /// Adds an email or phone at the end of the account's list.
    package func insertAddress(_ address: LookupInfo, account: Int64) throws {
        let (table, column): (String, String)
        switch address {
        case .emailAddress: (table, column) = ("account_email", "email")
        case .phoneNumber: (table, column) = ("account_phone", "phone")
        case .userRecordID: throw ShareFlowError.invalid("a userRecordID is not an address to add")
        }
        let position = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM \(table) WHERE accountID = ?"), arguments: [account]) ?? 0
        try db.execute(sql: "INSERT INTO \(table) (\(column), accountID, position) VALUES (?, ?, ?)",
                       arguments: [address.value, account, position])
    }

    package func setDiscoverability(_ value: Discoverability, of account: Int64) throws {
        try db.execute(sql: "UPDATE account SET discoverability = ? WHERE id = ?", arguments: [value.rawValue, account])
    }

    package func setName(_ name: NameComponents, of account: Int64) throws {
        let json = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
        try db.execute(sql: "UPDATE account SET name = ? WHERE id = ?", arguments: [json, account])
    }

    package func insertContact(_ lookup: LookupInfo, identifier: String, account: Int64) throws {
        try db.execute(sql: "INSERT INTO contact (accountID, kind, value, contactIdentifier) VALUES (?, ?, ?, ?)",
                       arguments: [account, lookup.kind, lookup.value, identifier])
    }

    /// R17: pending participants invited at `lookup` and matched to no account become `account`'s.
    package func matchPendingParticipants(_ lookup: LookupInfo, account: Int64) throws {
        try db.execute(sql: """
            UPDATE participant SET accountID = ?
            WHERE lookupKind = ? AND lookupValue = ? AND accountID IS NULL AND status = 'pending'
            """, arguments: [account, lookup.kind, lookup.value])
    }
}
