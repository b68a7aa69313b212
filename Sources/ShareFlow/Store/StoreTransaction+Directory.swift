import Foundation
import GRDB

/// Accounts, their addresses and contacts.
extension StoreTransaction {
    /// The statement behind FetchShareParticipants by email: the bench runs it through SQLite's
    /// C API as the baseline of SPEC §12.
    package static let identityByEmailSQL =
        "SELECT a.userRecordID, a.name, a.discoverability, a.id FROM account_email e JOIN account a ON a.id = e.accountID WHERE e.email = ?"

    package func accountID(for lookup: LookupInfo) throws -> Int64? {
        switch lookup {
        case .emailAddress(let e):
            return try fetchOne("SELECT accountID, email FROM account_email WHERE email = ?", [e], table: "account_email", keyAt: 1) {
                try $0.integer(0, "accountID")
            }
        case .phoneNumber(let p):
            return try fetchOne("SELECT accountID, phone FROM account_phone WHERE phone = ?", [p], table: "account_phone", keyAt: 1) {
                try $0.integer(0, "accountID")
            }
        case .userRecordID(let u):
            return try fetchOne("SELECT id FROM account WHERE userRecordID = ?", [u], table: "account", keyAt: 0) { try $0.integer(0, "id") }
        }
    }

    /// The account, its addresses and its contacts in one statement (four parts told apart by
    /// the first column), not four: this read opens nearly every request, and on PostgreSQL
    /// each statement is a round trip. Addresses at one position are ordered by their text,
    /// so both stores list them alike.
    static let accountSQL = """
        SELECT 0, userRecordID, name, discoverability, id FROM account WHERE id = ?
        UNION ALL SELECT 1, email, NULL, NULL, position FROM account_email WHERE accountID = ?
        UNION ALL SELECT 2, phone, NULL, NULL, position FROM account_phone WHERE accountID = ?
        UNION ALL SELECT 3, kind, value, contactIdentifier, id FROM contact WHERE accountID = ?
        ORDER BY 1, 5, 2
        """

    package func account(id: Int64) throws -> Account? {
        enum Part {
            case account(userRecordID: String, name: NameComponents, discoverability: Discoverability)
            case email(String)
            case phone(String)
            case contact(Account.Contact)
        }
        let parts = try fetchAll(StoreTransaction.accountSQL, [id, id, id, id], table: "account", keyAt: 4) { row -> Part in
            switch try row.integer(0, "part") {
            case 0:
                return .account(
                    userRecordID: try row.text(1, "userRecordID"),
                    name: try row.name(2, "name"),
                    discoverability: try row.word(3, "discoverability", as: Discoverability.self)
                )
            case 1: return .email(try row.of("account_email", keyAt: 1).text(1, "email"))
            case 2: return .phone(try row.of("account_phone", keyAt: 1).text(1, "phone"))
            default: return .contact(try StoreTransaction.contact(row.of("contact", keyAt: 4)))
            }
        }
        guard case .account(let userRecordID, let name, let discoverability)? = parts.first else { return nil }
        var emails: [String] = []
        var phones: [String] = []
        var contacts: [Account.Contact] = []
        for part in parts.dropFirst() {
            switch part {
            case .email(let e): emails.append(e)
            case .phone(let p): phones.append(p)
            case .contact(let c): contacts.append(c)
            case .account: break
            }
        }
        return Account(
            id: id,
            userRecordID: userRecordID,
            emails: emails,
            phones: phones,
            name: name,
            discoverability: discoverability,
            contacts: contacts
        )
    }

    /// `accountIdentityColumns` of the account `a` (its ID first): the row and its first
    /// addresses, the one at the lowest position, each one seek of the (accountID, position,
    /// address) index alone (schema 16). Before it, MIN(position) over the (accountID) index
    /// and the address at it took four seeks an address (issue 48), and `ORDER BY position`
    /// over that index a temporary sorter per read.
    static let accountIdentityColumns = """
        a.id, a.userRecordID, a.name, a.discoverability,
        (SELECT email FROM account_email WHERE accountID = a.id ORDER BY position LIMIT 1),
        (SELECT phone FROM account_phone WHERE accountID = a.id ORDER BY position LIMIT 1)
        """

    /// An account's identity read from `accountIdentityColumns` starting at column `at`; nil
    /// where they are NULL (a LEFT JOIN that found no account).
    static func accountIdentityRow(_ row: StoredRow, at i: Int) throws -> AccountIdentityRow? {
        let a = row.of("account", keyAt: i)
        guard let id = try a.optionalInteger(i, "id") else { return nil }
        return AccountIdentityRow(
            id: id,
            userRecordID: try a.text(i + 1, "userRecordID"),
            name: try a.name(i + 2, "name"),
            discoverability: try a.word(i + 3, "discoverability"),
            email: try a.optionalText(i + 4, "email"),
            phone: try a.optionalText(i + 5, "phone")
        )
    }

    /// What others see of account `id`: one statement, where `account(id:)` reads four.
    /// `accountIdentity(id:)`'s statement, made once (not on every read: issue 48).
    static let accountIdentitySQL = "SELECT \(accountIdentityColumns) FROM account a WHERE a.id = ?"

    package func accountIdentity(id: Int64) throws -> AccountIdentityRow? {
        try fetchOne(
            StoreTransaction.accountIdentitySQL,
            [id],
            table: "account",
            keyAt: 0
        ) { try StoreTransaction.accountIdentityRow($0, at: 0) } ?? nil
    }

    /// An account's contact as stored (`contact`, columns id, kind, value, contactIdentifier).
    static func contact(_ row: StoredRow) throws -> Account.Contact {
        Account.Contact(lookupInfo: try row.lookup(kindAt: 1, "kind", valueAt: 2, "value"), contactIdentifier: try row.text(3, "contactIdentifier"))
    }

    package func contacts(of account: Int64) throws -> [Account.Contact] {
        try fetchAll(
            "SELECT id, kind, value, contactIdentifier FROM contact WHERE accountID = ? ORDER BY id",
            [account],
            table: "contact",
            keyAt: 0,
            StoreTransaction.contact
        )
    }

    package func accountIDs() throws -> [Int64] {
        try fetchAll("SELECT id FROM account ORDER BY id", table: "account", keyAt: 0) { try $0.integer(0, "id") }
    }

    package func accountCount() throws -> Int {
        // COUNT(*) is SQLite's own integer, never a stored value: nothing to damage.
        try Int(fetchInteger("SELECT COUNT(*) FROM account") ?? 0)
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
            sql = "SELECT a.userRecordID, a.name, a.discoverability, a.id FROM account_phone p JOIN account a ON a.id = p.accountID WHERE p.phone = ?"
        case .userRecordID:
            sql = "SELECT userRecordID, name, discoverability, id FROM account WHERE userRecordID = ?"
        }
        // A cursor's row reads the statement's columns in place (a fetched row is a copy).
        return try fetchOne(sql, [lookup.value], table: "account", keyAt: 3) { row -> UserIdentity in
            var name: NameComponents?
            if try row.word(2, "discoverability", as: Discoverability.self).revealsName {
                name = try row.name(1, "name")
            }
            return UserIdentity(userRecordID: try row.text(0, "userRecordID"), lookupInfo: lookup, nameComponents: name, hasiCloudAccount: true)
        }
    }

    package func insertAccount(userRecordID: String, name: NameComponents, discoverability: Discoverability, at time: Double) throws -> Int64 {
        let nameJSON = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
        try directoryChanged()
        return try insert(
            "INSERT INTO account (userRecordID, name, discoverability, createdAt) VALUES (?, ?, ?, ?)",
            [userRecordID, nameJSON, discoverability.rawValue, time]
        )
    }

    /// Moves the directory's generation (a row of `shareflow_meta`): other processes on the store
    /// (servers' `StoreWatch`) read their cached accounts again when it moves.
    private func directoryChanged() throws {
        try run(
            """
            INSERT INTO shareflow_meta (key, value) VALUES ('directoryGeneration', '1')
            ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(shareflow_meta.value AS BIGINT) + 1 AS TEXT)
            """,
            []
        )
    }

    /// Adds an email or phone at the end of the account's list.
    package func insertAddress(_ address: LookupInfo, account: Int64) throws {
        let (table, column): (String, String)
        switch address {
        case .emailAddress: (table, column) = ("account_email", "email")
        case .phoneNumber: (table, column) = ("account_phone", "phone")
        case .userRecordID: throw ShareFlowError.invalid("a userRecordID is not an address to add")
        }
        // COUNT(*) is SQLite's own integer, never a stored value.
        let position = try Int(fetchInteger("SELECT COUNT(*) FROM \(table) WHERE accountID = ?", [account]) ?? 0)
        try run(
            "INSERT INTO \(table) (\(column), accountID, position) VALUES (?, ?, ?)",
            [address.value, account, position]
        )
        try directoryChanged()
    }

    package func setDiscoverability(_ value: Discoverability, of account: Int64) throws {
        try run("UPDATE account SET discoverability = ? WHERE id = ?", [value.rawValue, account])
        try directoryChanged()
    }

    package func setName(_ name: NameComponents, of account: Int64) throws {
        let json = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
        try run("UPDATE account SET name = ? WHERE id = ?", [json, account])
        try directoryChanged()
    }

    /// Contacts are part of their account as other processes cache it (discovery reads them):
    /// the directory's generation moves too, once.
    package func insertContacts(_ contacts: [(lookup: LookupInfo, identifier: String)], account: Int64) throws {
        for (lookup, identifier) in contacts {
            try run(
                "INSERT INTO contact (accountID, kind, value, contactIdentifier) VALUES (?, ?, ?, ?)",
                [account, lookup.kind, lookup.value, identifier]
            )
        }
        if !contacts.isEmpty { try directoryChanged() }
    }

    /// R17: pending participants invited at `lookup` and matched to no account become `account`'s.
    /// Each share's record changes with it (its tag is renewed, R21): logged, so feeds send it again.
    package func matchPendingParticipants(_ lookup: LookupInfo, account: Int64) throws {
        let matched = try fetchAll(
            """
            UPDATE participant SET accountID = ?
            WHERE lookupKind = ? AND lookupValue = ? AND accountID IS NULL AND status = 'pending' RETURNING id
            """,
            [account, lookup.kind, lookup.value],
            table: "participant",
            keyAt: 0
        ) { try $0.integer(0, "id") }
        for participant in matched { try logParticipantChanged(participant) }
    }
}

extension StoreTransaction {
    /// The first `limit` accounts' IDs, oldest first.
    package func accountIDs(limit: Int) throws -> [Int64] {
        try fetchAll("SELECT id FROM account ORDER BY id LIMIT ?", [Int64(limit)], table: "account", keyAt: 0) { try $0.integer(0, "id") }
    }

    /// The containers and environments an account has a part in, at most `limit`: where it owns
    /// a zone, where a share it has not been removed from lives, and where it holds a web
    /// token or a key. The console lists them as places to look (SPEC §21 C1); every read made
    /// there still goes through the engine as the account.
    package func containers(ofAccount id: Int64, limit: Int) throws -> [ContainerID] {
        try fetchAll(
            """
            SELECT container, environment FROM zone WHERE ownerID = ?
            UNION
            SELECT z.container, z.environment FROM participant p JOIN share s ON s.id = p.shareID JOIN zone z ON z.id = s.zoneID
            WHERE p.accountID = ? AND p.status <> 'removed'
            UNION
            SELECT container, COALESCE(environment, 'development') FROM credential
            WHERE accountID = ? AND kind IN ('webAuthToken', 'serverKey')
            ORDER BY 1, 2 LIMIT ?
            """,
            [id, id, id, Int64(limit)],
            table: "zone",
            keyAt: 0
        ) { row in
            ContainerID(try row.text(0, "container"), try row.word(1, "environment", as: CloudEnvironment.self))
        }
    }
}
