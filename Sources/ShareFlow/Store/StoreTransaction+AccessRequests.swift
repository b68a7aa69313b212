import Foundation

/// Access requests and blocked identities (SPEC §17, R39–R43): every row that records one, and
/// the probe a request is judged by.
extension StoreTransaction {
    // MARK: The probe

    /// R39, R27: for `caller` asking to join the share of `token`, everything the answer depends
    /// on — whether the share exists in `container` (its environment too: R32), is public, takes requests, has the caller
    /// on it (and how), blocks them, and has their open request — in one statement whose index
    /// seeks are the same whether or not the token is live, the share takes requests or the
    /// caller is blocked.
    package func probeAccessRequest(token: String, container: ContainerID, caller: Int64) throws -> AccessRequestProbe {
        let probe = try fetchOne(
            """
            SELECT s.id, s.publicPermission, s.allowsAccessRequests, p.status, p.role,
                   EXISTS (SELECT 1 FROM share_block b WHERE b.shareID = s.id AND (b.accountID = ?3
                           OR (b.accountID IS NULL AND b.lookupKind = 'emailAddress'
                               AND b.lookupValue IN (SELECT email FROM account_email WHERE accountID = ?3))
                           OR (b.accountID IS NULL AND b.lookupKind = 'phoneNumber'
                               AND b.lookupValue IN (SELECT phone FROM account_phone WHERE accountID = ?3)))),
                   (SELECT COUNT(*) FROM share_request r WHERE r.shareID = s.id),
                   (SELECT r.requestedAt FROM share_request r WHERE r.shareID = s.id AND r.accountID = ?3)
            FROM (SELECT ?1 AS token) q
            LEFT JOIN share s ON s.token = q.token
                AND EXISTS (SELECT 1 FROM zone z WHERE z.id = s.zoneID AND z.environment = ?2 AND z.container = ?4)
            LEFT JOIN participant p ON p.shareID = s.id AND p.accountID = ?3
            """,
            [token, container.environment.rawValue, caller, container.identifier],
            table: "share",
            keyAt: 0
        ) { row -> AccessRequestProbe in
            guard let id = try row.optionalInteger(0, "id") else { return .none }
            return AccessRequestProbe(
                share: id,
                isPublic: try row.word(1, "publicPermission", as: ParticipantPermission.self) != .none,
                allowsRequests: try row.integer(2, "allowsAccessRequests") != 0,
                status: try row.optionalText(3, "status") == nil ? nil : row.word(3, "status"),
                role: try row.optionalText(4, "role") == nil ? nil : row.word(4, "role"),
                isBlocked: try row.integer(5, "EXISTS") != 0,
                openRequests: Int(try row.integer(6, "COUNT")),
                requestedAt: try row.optionalReal(7, "requestedAt")
            )
        }
        return probe ?? .none
    }

    // MARK: Requests

    /// Records `account`'s request to join `share`, or refreshes the one they have (R39): one
    /// row per account and share whoever writes it, on any node (the unique index decides).
    package func recordAccessRequest(share: Int64, account: Int64, lookup: LookupInfo, at time: Double) throws {
        try run(
            """
            INSERT INTO share_request (shareID, accountID, requestID, lookupKind, lookupValue, requestedAt) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (shareID, accountID) DO UPDATE SET requestedAt = excluded.requestedAt,
                lookupKind = excluded.lookupKind, lookupValue = excluded.lookupValue
            """,
            [share, account, RandomIdentifier.uuidString(), lookup.kind, lookup.value, time]
        )
        try renewShareTag(share)
    }

    /// The share's open requests, oldest first, each with its requester's account.
    package func accessRequests(share: Int64) throws -> [AccessRequestRow] {
        try fetchAll(
            """
            SELECT q.id, q.requestID, q.lookupKind, q.lookupValue, q.requestedAt, q.shareID, \(StoreTransaction.accountIdentityColumns)
            FROM share_request q JOIN account a ON a.id = q.accountID WHERE q.shareID = ? ORDER BY q.requestedAt, q.id
            """,
            [share],
            table: "share_request",
            keyAt: 0,
            StoreTransaction.accessRequestRow
        )
    }

    /// Open requests made at or before `cutoff`, oldest first, across the store (`sf.admin
    /// .accessRequests`, `store compact`), at most `limit`.
    package func accessRequests(madeBefore cutoff: Double, limit: Int) throws -> [AccessRequestRow] {
        try fetchAll(
            """
            SELECT q.id, q.requestID, q.lookupKind, q.lookupValue, q.requestedAt, q.shareID, \(StoreTransaction.accountIdentityColumns)
            FROM share_request q JOIN account a ON a.id = q.accountID WHERE q.requestedAt <= ? ORDER BY q.requestedAt, q.id LIMIT ?
            """,
            [cutoff, limit],
            table: "share_request",
            keyAt: 0,
            StoreTransaction.accessRequestRow
        )
    }

    private static func accessRequestRow(_ row: StoredRow) throws -> AccessRequestRow {
        guard let account = try StoreTransaction.accountIdentityRow(row, at: 6) else {
            throw row.damaged("accountID", "its account is missing")
        }
        return AccessRequestRow(
            id: try row.integer(0, "id"),
            requestID: try row.text(1, "requestID"),
            lookup: try row.lookup(kindAt: 2, "lookupKind", valueAt: 3, "lookupValue"),
            requestedAt: try row.real(4, "requestedAt"),
            share: try row.integer(5, "shareID"),
            account: account
        )
    }

    /// Closes requests (R41: approved, denied or blocked; R42: the share went public or they
    /// aged out). Renews each share's tag once (R43).
    package func closeAccessRequests(_ ids: [Int64], share: Int64) throws {
        guard !ids.isEmpty else { return }
        for id in ids { try run("DELETE FROM share_request WHERE id = ? AND shareID = ?", [id, share]) }
        try renewShareTag(share)
    }

    /// Whether `account` has an open request to join `share`.
    package func hasAccessRequest(share: Int64, account: Int64) throws -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM share_request WHERE shareID = ? AND accountID = ?)", [share, account])
    }

    /// Closes `account`'s request to join `share`, if any (they were added or blocked).
    package func closeAccessRequest(share: Int64, account: Int64) throws -> Bool {
        guard try run("DELETE FROM share_request WHERE shareID = ? AND accountID = ?", [share, account]) > 0 else { return false }
        try renewShareTag(share)
        return true
    }

    /// R42: a share made public takes no requests; they close.
    package func closeAllAccessRequests(share: Int64) throws -> Int {
        let count = try run("DELETE FROM share_request WHERE shareID = ?", [share])
        guard count > 0 else { return 0 }
        try renewShareTag(share)
        return count
    }

    // MARK: Blocks

    /// The share's blocked identities, oldest first, each with its account where it has one.
    package func blockedIdentities(share: Int64) throws -> [BlockRow] {
        try fetchAll(
            """
            SELECT b.id, b.blockID, b.lookupKind, b.lookupValue, b.blockedAt, b.accountID, \(StoreTransaction.accountIdentityColumns)
            FROM share_block b LEFT JOIN account a ON a.id = b.accountID WHERE b.shareID = ? ORDER BY b.blockedAt, b.id
            """,
            [share],
            table: "share_block",
            keyAt: 0
        ) { row in
            BlockRow(
                id: try row.integer(0, "id"),
                blockID: try row.text(1, "blockID"),
                lookup: try row.lookup(kindAt: 2, "lookupKind", valueAt: 3, "lookupValue"),
                blockedAt: try row.real(4, "blockedAt"),
                accountID: try row.optionalInteger(5, "accountID"),
                account: try StoreTransaction.accountIdentityRow(row, at: 6)
            )
        }
    }

    /// Blocks an identity on `share`: by account where it has one, else by address (R41).
    /// Blocking one already blocked changes nothing.
    package func block(share: Int64, account: Int64?, lookup: LookupInfo, at time: Double) throws {
        let already =
            if let account {
                try exists("SELECT EXISTS (SELECT 1 FROM share_block WHERE shareID = ? AND accountID = ?)", [share, account])
            } else {
                try exists(
                    "SELECT EXISTS (SELECT 1 FROM share_block WHERE shareID = ? AND accountID IS NULL AND lookupKind = ? AND lookupValue = ?)",
                    [share, lookup.kind, lookup.value]
                )
            }
        guard !already else { return }
        try run(
            "INSERT INTO share_block (shareID, accountID, blockID, lookupKind, lookupValue, blockedAt) VALUES (?, ?, ?, ?, ?, ?)",
            [share, account, RandomIdentifier.uuidString(), lookup.kind, lookup.value, time]
        )
        try renewShareTag(share)
    }

    /// Takes blocks off `share` (R41).
    package func unblock(_ ids: [Int64], share: Int64) throws {
        guard !ids.isEmpty else { return }
        for id in ids { try run("DELETE FROM share_block WHERE id = ? AND shareID = ?", [id, share]) }
        try renewShareTag(share)
    }

    /// Whether `share` blocks the identity of `account` or of `lookup` (R42): by the account,
    /// or by an address of the account, or by `lookup` itself.
    package func isBlocked(share: Int64, account: Int64?, lookup: LookupInfo?) throws -> Bool {
        if let account,
            try exists(
                """
                SELECT EXISTS (SELECT 1 FROM share_block b WHERE b.shareID = ?1 AND (b.accountID = ?2
                    OR (b.accountID IS NULL AND b.lookupKind = 'emailAddress' AND b.lookupValue IN (SELECT email FROM account_email WHERE accountID = ?2))
                    OR (b.accountID IS NULL AND b.lookupKind = 'phoneNumber' AND b.lookupValue IN (SELECT phone FROM account_phone WHERE accountID = ?2))))
                """,
                [share, account]
            )
        {
            return true
        }
        guard let lookup, lookup.kind != "userRecordID" else { return false }
        return try exists(
            "SELECT EXISTS (SELECT 1 FROM share_block WHERE shareID = ? AND lookupKind = ? AND lookupValue = ?)",
            [share, lookup.kind, lookup.value]
        )
    }

    // MARK: One-time links (R44)

    /// The one-time link of `token`, if it is one: its participant and the share's own token.
    /// One seek on the participant's unique index, made for every URL resolved (R27).
    package func oneTimeLink(token: String) throws -> OneTimeLinkRow? {
        try fetchOne(
            """
            SELECT p.id, s.token, p.accountID, p.status, p.permission, p.shareID FROM participant p JOIN share s ON s.id = p.shareID
            WHERE p.oneTimeToken = ?
            """,
            [token],
            table: "participant",
            keyAt: 0
        ) { row in
            OneTimeLinkRow(
                participant: try row.integer(0, "id"),
                shareToken: try row.of("share", keyAt: 5).text(1, "token"),
                claimedBy: try row.optionalInteger(2, "accountID"),
                status: try row.word(3, "status"),
                permission: try row.word(4, "permission")
            )
        }
    }

    /// Gives a one-time link's participant its token (R44).
    package func setOneTimeToken(_ token: String, participant: Int64) throws {
        try run("UPDATE participant SET oneTimeToken = ? WHERE id = ?", [token, participant])
    }

    /// The first accept of a one-time link claims its participant for `account` (R44): it
    /// becomes theirs, accepted, named by their address. False when someone claimed it first.
    package func claimOneTimeLink(participant: Int64, account: Int64, lookup: LookupInfo) throws -> Bool {
        let claimed = try run(
            """
            UPDATE participant SET accountID = ?, lookupKind = ?, lookupValue = ?, status = 'accepted'
            WHERE id = ? AND accountID IS NULL AND status = 'pending'
            """,
            [account, lookup.kind, lookup.value, participant]
        )
        guard claimed == 1 else { return false }
        try logParticipantChanged(participant)
        return true
    }

    // MARK: Approved requesters

    /// Marks a participant as added by approving their request (R41).
    package func setApprovedRequester(participant: Int64) throws {
        try run("UPDATE participant SET approvedRequester = 1 WHERE id = ?", [participant])
    }

    /// A share's change tag moves and the share reappears in its owner's and administrators'
    /// feeds (R43): its requests and blocks are theirs to see (R40), so no other participant's
    /// feed learns that anyone asked.
    private func renewShareTag(_ share: Int64) throws {
        try run("UPDATE record SET tag = ? WHERE id = (SELECT recordID FROM share WHERE id = ?)", [RandomIdentifier.changeTag(), share])
        try logShareAccessChanged(share)
    }
}

/// What a request to join a share depends on (R39), read in one statement.
package struct AccessRequestProbe {
    /// Nil when no share has the token in the environment.
    package let share: Int64?
    package let isPublic: Bool
    package let allowsRequests: Bool
    /// The caller's standing on the share, if they have a row.
    package let status: ParticipantAcceptanceStatus?
    package let role: ParticipantRole?
    package let isBlocked: Bool
    package let openRequests: Int
    /// When the caller last asked, if their request is open.
    package let requestedAt: Double?
    package var hasRequest: Bool { requestedAt != nil }

    static let none = AccessRequestProbe(
        share: nil,
        isPublic: false,
        allowsRequests: false,
        status: nil,
        role: nil,
        isBlocked: false,
        openRequests: 0,
        requestedAt: nil
    )
}

/// An open access request as stored, with its requester's account.
package struct AccessRequestRow {
    package let id: Int64
    package let requestID: String
    package let lookup: LookupInfo
    package let requestedAt: Double
    package let share: Int64
    package let account: AccountIdentityRow
}

/// A blocked identity as stored.
package struct BlockRow {
    package let id: Int64
    package let blockID: String
    package let lookup: LookupInfo
    package let blockedAt: Double
    package let accountID: Int64?
    package let account: AccountIdentityRow?
}

/// A one-time link as stored (R44).
package struct OneTimeLinkRow {
    package let participant: Int64
    /// The share's own URL token.
    package let shareToken: String
    /// The account that claimed it; nil while unclaimed.
    package let claimedBy: Int64?
    package let status: ParticipantAcceptanceStatus
    package let permission: ParticipantPermission
}
