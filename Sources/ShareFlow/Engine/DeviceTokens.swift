import Foundation

/// A device token as made (SPEC §20 N3): `apnsToken` names it to `tokens/register`;
/// `pollSecret` is its webcourier URL's last part. The store keeps only their hashes.
package struct DeviceTokenGrant: Sendable {
    package let apnsToken: String
    package let pollSecret: String
    package let apnsEnvironment: String
}

/// What a poll of a device token finds.
package enum PollState: Sendable {
    /// No such token (never made, revoked with its web auth token, or its account gone).
    case unknown
    /// Nothing due: wait on inbox `inbox` (nil: none yet, `account`'s) past position `seq`;
    /// `stale`: token `token` was last noted polled over a minute ago (note it: a token polled
    /// and told nothing is not idle).
    case waiting(inbox: Int64?, seq: Int64, account: Int64, token: Int64, stale: Bool)
    /// A notification to hand out: move the token's cursor from `from` to `to` first.
    case due(token: Int64, from: Int64, to: Int64, dropped: Int64, SubscriptionNotification)
    /// Only notifications the token is not to get (its own `clientId`'s, or about data its
    /// user may no longer read): move past them and look again.
    case skipped(token: Int64, from: Int64, to: Int64, dropped: Int64)
}

/// Device tokens and reading their queues (SPEC §20 N3).
extension Engine {
    /// Makes a device token for `account` in `container`, bound to the web auth token whose
    /// hash is `credentialHash` (revoking it ends the device token).
    package func createDeviceToken(
        account: Int64,
        container: ContainerID,
        apnsEnvironment: String,
        credentialHash: String?,
        clientID: String?
    ) throws -> DeviceTokenGrant {
        let grant = DeviceTokenGrant(
            apnsToken: Data(RandomIdentifier.bytes(32)).base64EncodedString(),
            pollSecret: AssetReceipts.make(),
            apnsEnvironment: apnsEnvironment
        )
        try transaction(scope: .zones([])) { db in
            try db.insertDeviceToken(
                DeviceTokenRow(
                    tokenHash: AssetReceipts.hash(grant.apnsToken),
                    pollHash: AssetReceipts.hash(grant.pollSecret),
                    accountID: account,
                    credentialHash: credentialHash,
                    container: container.identifier,
                    environment: container.environment.rawValue,
                    apnsEnvironment: apnsEnvironment,
                    clientID: clientID,
                    createdAt: EngineClock.seconds
                ),
                maxPerUser: options.notifications.maxTokensPerUser
            )
        }
        return grant
    }

    /// Binds `apnsToken` to the caller's current web auth token; a token that is not one of
    /// the caller's in this container fails exactly as one that does not exist.
    package func registerDeviceToken(
        apnsToken: String,
        account: Int64,
        container: ContainerID,
        credentialHash: String?,
        apnsEnvironment: String,
        clientID: String?
    ) throws {
        let found = try transaction(scope: .zones([])) { db in
            try db.registerDeviceToken(
                tokenHash: AssetReceipts.hash(apnsToken),
                account: account,
                container: container,
                credentialHash: credentialHash,
                apnsEnvironment: apnsEnvironment,
                clientID: clientID
            )
        }
        guard found else { throw ShareFlowError(.invalidArguments, "apnsToken is not one of this user's device tokens in this container") }
    }

    /// What a poll of the token whose secret is `pollSecret` finds. Visibility is decided
    /// again here: a notification queued about a zone its user no longer shares is skipped.
    package func nextNotification(pollSecret: String) throws -> PollState {
        try reading { db in
            guard let t = try db.pollingToken(pollHash: AssetReceipts.hash(pollSecret)) else { return .unknown }
            let stale = t.lastPollAt < EngineClock.seconds - 60
            guard let inbox = t.inbox else { return .waiting(inbox: nil, seq: 0, account: t.accountID, token: t.id, stale: stale) }
            // Positions pruned before this token took them are counted as dropped.
            let cursor = max(t.delivered, t.keptFrom - 1)
            let dropped = cursor - t.delivered
            guard t.seq > cursor else {
                return dropped > 0
                    ? .skipped(token: t.id, from: t.delivered, to: cursor, dropped: dropped)
                    : .waiting(inbox: inbox, seq: t.seq, account: t.accountID, token: t.id, stale: stale)
            }
            let rows = try db.notifications(inbox: inbox, after: cursor, limit: 32)
            for row in rows {
                if let mine = t.clientID, row.clientID == mine { continue }
                guard let n = try Engine.deliverable(row, to: t.accountID, db: db) else { continue }
                return .due(token: t.id, from: t.delivered, to: row.seq, dropped: dropped, n)
            }
            return .skipped(token: t.id, from: t.delivered, to: rows.last?.seq ?? t.seq, dropped: dropped)
        }
    }

    /// A queued notification as its account may still be told it (R12, R15, R37 decided
    /// again: a participant removed since, or a record moved out of what they see, is not
    /// told); nil otherwise.
    static func deliverable(_ row: StoredNotification, to account: Int64, db: StoreTransaction) throws -> SubscriptionNotification? {
        if row.scope == "shared" {
            let visible =
                row.recordName != nil && row.reason != SubscriptionNotification.Reason.deleted.rawValue
                ? try db.viewerSees(account, zone: row.zoneID, name: row.recordName!)
                : try db.zoneIsShared(row.zoneID, with: account)
            guard visible else { return nil }
        }
        return try? JSONDecoder().decode(SubscriptionNotification.self, from: Data(row.payload.utf8))
    }

    /// `account`'s notifications in `container` after position `after` (nil: none, the
    /// inbox's position now), at most `limit`, as the change stream sends them (SPEC §20):
    /// the position reached, and those of database `scope` it may still be told.
    package func inboxNotifications(
        account: Int64,
        container: ContainerID,
        scope: DatabaseScope,
        after: Int64?,
        limit: Int = 16
    ) throws -> (seq: Int64, notifications: [SubscriptionNotification]) {
        try reading { db in
            guard
                let (inbox, seq) = try db.inbox(account: account, container: container.identifier, environment: container.environment.rawValue)
            else { return (after ?? 0, []) }
            guard let after, seq > after else { return (after ?? seq, []) }
            let rows = try db.notifications(inbox: inbox, after: after, limit: limit)
            let told = try rows.filter { $0.scope == scope.rawValue }.compactMap { try Engine.deliverable($0, to: account, db: db) }
            return (rows.last?.seq ?? seq, told)
        }
    }

    /// Moves a token's cursor (`PollState.due`, `.skipped`); false when another poll of the
    /// same token moved it first (look again).
    package func moveDeliveredNotifications(token: Int64, from: Int64, to: Int64, dropped: Int64) throws -> Bool {
        try transaction(scope: .zones([])) { db in
            try db.moveDelivered(token: token, from: from, to: to, dropped: dropped, at: EngineClock.seconds)
        }
    }

    /// Notes that token `token` was polled now (`PollState.waiting`'s `stale`).
    package func touchDeviceToken(_ token: Int64) throws {
        try transaction(scope: .zones([])) { try $0.touchDeviceToken(token, at: EngineClock.seconds) }
    }

    /// Each inbox's last position (a server's held polls, woken by another process's dispatch).
    package func inboxPositions(_ ids: [Int64]) throws -> [Int64: Int64] {
        try reading { try $0.inboxPositions(ids) }
    }

    /// Removes device tokens nobody polled for `notifications.tokenIdleDays`; how many.
    @discardableResult
    package func pruneIdleDeviceTokens(limit: Int = 1000) throws -> Int {
        try locked { try store.pruneIdleDeviceTokens(idleDays: options.notifications.tokenIdleDays, limit: limit) }
    }
}
