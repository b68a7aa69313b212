import Foundation
import GRDB

/// Subscriptions, the notification outbox, inboxes and device tokens (SPEC §20).
///
/// A record change in a zone some subscription may fire for writes one `notify_change` row in
/// its own transaction; `Engine.dispatchNotifications` evaluates the subscriptions after the
/// commit and appends to each subscriber's inbox (`notify_inbox`, `notification`); a device
/// token is a cursor into its account's inbox.
extension StoreTransaction {
    /// Whether this transaction runs on a driver's database (PostgreSQL): SQL spelt apart.
    var isDriver: Bool {
        if case .driver = connection { return true }
        return false
    }

    // MARK: Subscriptions

    static let subscriptionColumns =
        "id, accountID, container, environment, scope, subscriptionID, kind, zoneID, zoneName, zoneOwner, recordType, predicate, firesOn, firesOnce, info, wire, createdAt, cost"

    static func subscriptionRow(_ r: StoredRow) throws -> SubscriptionRow {
        SubscriptionRow(
            id: try r.integer(0, "id"),
            accountID: try r.integer(1, "accountID"),
            container: try r.text(2, "container"),
            environment: try r.text(3, "environment"),
            scope: try r.text(4, "scope"),
            subscriptionID: try r.text(5, "subscriptionID"),
            kind: try r.text(6, "kind"),
            zoneID: try r.optionalInteger(7, "zoneID"),
            zoneName: try r.optionalText(8, "zoneName"),
            zoneOwner: try r.optionalText(9, "zoneOwner"),
            recordType: try r.optionalText(10, "recordType"),
            predicate: try r.optionalText(11, "predicate"),
            firesOn: Int(try r.integer(12, "firesOn")),
            firesOnce: try r.integer(13, "firesOnce") != 0,
            info: try r.text(14, "info"),
            wire: try r.optionalText(15, "wire"),
            createdAt: try r.real(16, "createdAt"),
            cost: Int(try r.integer(17, "cost"))
        )
    }

    /// The caller's subscription named `subscriptionID` in one database.
    package func subscription(account: Int64, container: ContainerID, scope: String, id subscriptionID: String) throws -> SubscriptionRow? {
        try fetchOne(
            """
            SELECT \(StoreTransaction.subscriptionColumns) FROM subscription
            WHERE accountID = ? AND container = ? AND environment = ? AND scope = ? AND subscriptionID = ?
            """,
            [account, container.identifier, container.environment.rawValue, scope, subscriptionID],
            table: "subscription",
            keyAt: 0,
            StoreTransaction.subscriptionRow
        )
    }

    /// The caller's subscriptions in one database, oldest first, at most `limit`.
    package func subscriptions(account: Int64, container: ContainerID, scope: String, limit: Int) throws -> [SubscriptionRow] {
        try fetchAll(
            """
            SELECT \(StoreTransaction.subscriptionColumns) FROM subscription
            WHERE accountID = ? AND container = ? AND environment = ? AND scope = ? ORDER BY id LIMIT ?
            """,
            [account, container.identifier, container.environment.rawValue, scope, Int64(limit)],
            table: "subscription",
            keyAt: 0,
            StoreTransaction.subscriptionRow
        )
    }

    /// How many subscriptions the account has in the container (every database), and how many
    /// of them name no zone (database and zone-wide ones: any change in reach evaluates them).
    package func subscriptionCounts(account: Int64, container: ContainerID) throws -> (all: Int, zoneless: Int) {
        try fetchOne(
            """
            SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN zoneID IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT) FROM subscription
            WHERE accountID = ? AND container = ? AND environment = ?
            """,
            [account, container.identifier, container.environment.rawValue],
            table: "subscription",
            keyAt: 0
        ) { (Int(try $0.integer(0, "COUNT")), Int(try $0.integer(1, "SUM"))) } ?? (0, 0)
    }

    /// How many subscriptions, everyone's, name zone row `zone`, and what evaluating them
    /// all costs each change there.
    package func subscriptionCount(zone: Int64) throws -> (count: Int, cost: Int) {
        try fetchOne(
            "SELECT COUNT(*), CAST(COALESCE(SUM(cost), 0) AS BIGINT) FROM subscription WHERE zoneID = ?",
            [zone],
            table: "subscription",
            keyAt: 0
        ) { (Int(try $0.integer(0, "COUNT")), Int(try $0.integer(1, "SUM"))) } ?? (0, 0)
    }

    /// What evaluating the account's zone-less subscriptions in the container costs each change
    /// in their reach.
    package func zonelessCost(account: Int64, container: ContainerID) throws -> Int {
        Int(
            try fetchInteger(
                "SELECT CAST(COALESCE(SUM(cost), 0) AS BIGINT) FROM subscription WHERE accountID = ? AND container = ? AND environment = ? AND zoneID IS NULL",
                [account, container.identifier, container.environment.rawValue]
            ) ?? 0
        )
    }

    /// Saves `row` in place of the one of the same owner, database and ID (its row ID and
    /// `createdAt` kept), or as a new one; the row as stored.
    @discardableResult
    package func saveSubscription(_ row: SubscriptionRow) throws -> SubscriptionRow {
        try run(
            """
            INSERT INTO subscription (accountID, container, environment, scope, subscriptionID, kind, zoneID, zoneName, zoneOwner, recordType,
                predicate, firesOn, firesOnce, info, wire, createdAt, cost)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (accountID, container, environment, scope, subscriptionID) DO UPDATE SET kind = excluded.kind, zoneID = excluded.zoneID,
                zoneName = excluded.zoneName, zoneOwner = excluded.zoneOwner, recordType = excluded.recordType, predicate = excluded.predicate,
                firesOn = excluded.firesOn, firesOnce = excluded.firesOnce, info = excluded.info, wire = excluded.wire, cost = excluded.cost
            """,
            [
                row.accountID, row.container, row.environment, row.scope, row.subscriptionID, row.kind, row.zoneID, row.zoneName, row.zoneOwner,
                row.recordType, row.predicate, Int64(row.firesOn), row.firesOnce ? 1 : 0, row.info, row.wire, row.createdAt, Int64(row.cost),
            ]
        )
        let container = ContainerID(row.container, CloudEnvironment(rawValue: row.environment) ?? .development)
        return try subscription(account: row.accountID, container: container, scope: row.scope, id: row.subscriptionID) ?? row
    }

    /// Deletes the caller's subscription; false when there was none.
    package func deleteSubscription(account: Int64, container: ContainerID, scope: String, id subscriptionID: String) throws -> Bool {
        try run(
            "DELETE FROM subscription WHERE accountID = ? AND container = ? AND environment = ? AND scope = ? AND subscriptionID = ?",
            [account, container.identifier, container.environment.rawValue, scope, subscriptionID]
        ) > 0
    }

    /// Deletes subscription row `id` (one that fires once, firing); false when another
    /// dispatch deleted it first.
    func claimSubscription(row id: Int64) throws -> Bool {
        try run("DELETE FROM subscription WHERE id = ?", [id]) == 1
    }

    // MARK: The outbox, written with the change

    /// Whether some subscription may fire for a change in zone row `id`: one naming it, the
    /// owner's database or zone-wide ones (private), anyone's in the shared database of the
    /// container (the dispatcher decides who sees the change), zone-wide ones in the public
    /// database. Read once a transaction.
    func notifyWatched(zone id: Int64) throws -> Bool {
        if let known = feedBumps?.watched[id] { return known }
        // A private zone's answer comes with the log's read of it (one statement either way).
        if logs, try zoneForRecordLog(id) != nil, let known = feedBumps?.watched[id] { return known }
        let watched = try exists(
            """
            SELECT EXISTS (SELECT 1 FROM subscription WHERE zoneID = ?1)
                OR EXISTS (SELECT 1 FROM zone z CROSS JOIN subscription s ON s.container = z.container AND s.environment = z.environment
                           AND s.zoneID IS NULL
                           WHERE z.id = ?1 AND ((z.scope = 'public' AND s.scope = 'public')
                               OR (z.scope = 'private' AND (s.scope = 'shared' OR (s.scope = 'private' AND s.accountID = z.ownerID)))))
            """,
            [id]
        )
        feedBumps?.watched[id] = watched
        return watched
    }

    /// Notes a record change for the subscriptions of its zone, when some may fire for it:
    /// `reason` 1 made, 2 changed, 3 deleted; `seq` its position in the zone's log (0 in a
    /// public zone); `fields` the record's stored fields (as saved, or last saved).
    func noteForSubscriptions(
        zone: Int64,
        name: String,
        type: String,
        reason: Int,
        seq: Int64?,
        writer: Int64?,
        fields: String?,
        createdBy: Int64?,
        createdAt: Double?,
        viewers: [Int64],
        at time: Double
    ) throws {
        guard logs, try notifyWatched(zone: zone) else { return }
        // Who may be told is decided now, as the change log sent it (R12, R15, R37), not when
        // the change is dispatched: by then the record may have moved into someone's view, and
        // this version of it (its fields) was never theirs.
        let told = viewers.isEmpty ? nil : viewers.map(String.init).joined(separator: ",")
        try run(
            """
            INSERT INTO notify_change (zoneID, node, name, type, reason, seq, writerID, clientID, fields, createdBy, createdAt, viewers, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                zone, StoreTransaction.nodeID, name, type, Int64(reason), seq ?? 0, writer, WriteOrigin.clientID, fields, createdBy, createdAt,
                told, time,
            ]
        )
        feedBumps?.outboxWritten = true
    }

    /// This process's name in the outbox: it dispatches its own changes at once, and another
    /// process's only once they wait past `takeoverSeconds` (that process may be gone).
    package static let nodeID = UUID().uuidString

    // MARK: Dispatch

    /// Zones with changes to dispatch: this process's, or any older than `before`; those after
    /// zone row `after`, in row order, at most `limit`.
    package func outboxZones(node: String, before: Double, after: Int64, limit: Int) throws -> [Int64] {
        try fetchAll(
            "SELECT DISTINCT zoneID FROM notify_change WHERE (node = ? OR at < ?) AND zoneID > ? ORDER BY zoneID LIMIT ?",
            [node, before, after, Int64(limit)],
            table: "notify_change",
            keyAt: 0
        ) { try $0.integer(0, "zoneID") }
    }

    /// Whether any change waits in the outbox.
    package func outboxIsEmpty() throws -> Bool {
        try !exists("SELECT EXISTS (SELECT 1 FROM notify_change)")
    }

    /// Zone row `id` as the dispatcher needs it: where it is and whose.
    package func notifyZone(_ id: Int64) throws -> NotifyZone? {
        try fetchOne(
            """
            SELECT z.id, z.container, z.environment, z.scope, z.name, z.ownerID, (SELECT userRecordID FROM account WHERE id = z.ownerID)
            FROM zone z WHERE z.id = ?
            """,
            [id],
            table: "zone",
            keyAt: 0
        ) {
            NotifyZone(
                id: try $0.integer(0, "id"),
                container: try $0.text(1, "container"),
                environment: try $0.text(2, "environment"),
                scope: try $0.text(3, "scope"),
                name: try $0.text(4, "name"),
                ownerID: try $0.integer(5, "ownerID"),
                ownerName: try $0.optionalText(6, "userRecordID")
            )
        }
    }

    /// The first `limit` changes of zone `zone` in the order they were committed.
    package func outboxChanges(zone: Int64, limit: Int) throws -> [NotifyChangeRow] {
        try fetchAll(
            """
            SELECT id, name, type, reason, seq, writerID, clientID, fields, createdBy, createdAt, at,
                (SELECT userRecordID FROM account WHERE id = notify_change.writerID),
                (SELECT userRecordID FROM account WHERE id = notify_change.createdBy), viewers, progress
            FROM notify_change WHERE zoneID = ? ORDER BY id LIMIT ?
            """,
            [zone, Int64(limit)],
            table: "notify_change",
            keyAt: 0
        ) {
            NotifyChangeRow(
                id: try $0.integer(0, "id"),
                name: try $0.text(1, "name"),
                type: try $0.text(2, "type"),
                reason: Int(try $0.integer(3, "reason")),
                seq: try $0.integer(4, "seq"),
                writerID: try $0.optionalInteger(5, "writerID"),
                clientID: try $0.optionalText(6, "clientID"),
                fields: try $0.optionalText(7, "fields"),
                createdBy: try $0.optionalInteger(8, "createdBy"),
                createdAt: try $0.optionalReal(9, "createdAt"),
                at: try $0.real(10, "at"),
                writerName: try $0.optionalText(11, "userRecordID"),
                creatorName: try $0.optionalText(12, "userRecordID"),
                viewers: Set((try $0.optionalText(13, "viewers") ?? "").split(separator: ",").compactMap { Int64($0) }),
                progress: try $0.integer(14, "progress")
            )
        }
    }

    /// Notes that change `id`'s subscriptions up to row `through` were evaluated.
    package func noteProgress(change id: Int64, through: Int64) throws {
        try run("UPDATE notify_change SET progress = ? WHERE id = ?", [through, id])
    }

    /// Removes zone `zone`'s changes up to row `id`: dispatched.
    package func removeOutbox(zone: Int64, through id: Int64) throws {
        try run("DELETE FROM notify_change WHERE zoneID = ? AND id <= ?", [zone, id])
    }

    /// The subscriptions a change in `zone` may fire: those naming it, the owner's zone-less
    /// private ones, zone-less shared ones of accounts the zone is shared with (R12), and
    /// zone-less public ones in a public zone.
    package func candidateSubscriptions(for zone: NotifyZone) throws -> [SubscriptionRow] {
        // Without `wire` (the HTTP form, for listing only), in one order (row ID): a change
        // whose evaluation a job left half done is taken up at the next row.
        let columns = StoreTransaction.subscriptionColumns.replacingOccurrences(of: "wire", with: "NULL")
        return try fetchAll(
            """
            SELECT * FROM (
            SELECT \(columns) FROM subscription WHERE zoneID = ?1
            UNION ALL
            SELECT \(columns) FROM subscription
            WHERE zoneID IS NULL AND container = ?2 AND environment = ?3
              AND ((?4 = 'public' AND scope = 'public') OR (?4 = 'private' AND scope = 'private' AND accountID = ?5)
                   OR (?4 = 'private' AND scope = 'shared' AND accountID IN (
                        SELECT p.accountID FROM share s CROSS JOIN participant p ON p.shareID = s.id
                        WHERE s.zoneID = ?1 AND p.accountID IS NOT NULL AND \(StoreTransaction.sees))))
            ) candidates ORDER BY id
            """,
            [zone.id, zone.container, zone.environment, zone.scope, zone.ownerID],
            table: "subscription",
            keyAt: 0,
            StoreTransaction.subscriptionRow
        )
    }

    /// Whether `viewer` sees record `name` of zone `zone` in their shared database now (R12,
    /// R37: a live entry of the change log's, whose visibility `SharingRules` generates).
    package func viewerSees(_ viewer: Int64, zone: Int64, name: String) throws -> Bool {
        try exists(
            "SELECT EXISTS (SELECT 1 FROM view_change WHERE zoneID = ? AND viewerID = ? AND name = ? AND deleted = 0)",
            [zone, viewer, name]
        )
    }

    /// Whether zone `zone` is shared with `account` now (a participant who may read, R12).
    package func zoneIsShared(_ zone: Int64, with account: Int64) throws -> Bool {
        try exists(
            """
            SELECT EXISTS (SELECT 1 FROM share s CROSS JOIN participant p ON p.shareID = s.id
                           WHERE s.zoneID = ? AND p.accountID = ? AND \(StoreTransaction.sees))
            """,
            [zone, account]
        )
    }

    /// Appends `notifications` to the inbox of `account` in one container, dropping the oldest
    /// past `queueMax`; the inbox's row ID and its new last position.
    package func appendNotifications(
        account: Int64,
        container: String,
        environment: String,
        _ notifications: [NotificationRow],
        queueMax: Int
    ) throws -> (inbox: Int64, seq: Int64) {
        try run(
            "INSERT INTO notify_inbox (accountID, container, environment, seq, keptFrom, dropped) VALUES (?, ?, ?, 0, 1, 0) ON CONFLICT DO NOTHING",
            [account, container, environment]
        )
        guard
            let (inbox, last, keptFrom) = try fetchOne(
                "UPDATE notify_inbox SET seq = seq + ? WHERE accountID = ? AND container = ? AND environment = ? RETURNING id, seq, keptFrom",
                [Int64(notifications.count), account, container, environment],
                table: "notify_inbox",
                keyAt: 0,
                { (try $0.integer(0, "id"), try $0.integer(1, "seq"), try $0.integer(2, "keptFrom")) }
            )
        else { throw ShareFlowError(.serviceUnavailable, "store \(path ?? "(memory)"): an inbox was not there after it was made").forOperator() }
        var seq = last - Int64(notifications.count)
        for n in notifications {
            seq += 1
            try run(
                """
                INSERT INTO notification (inboxID, seq, nid, subscriptionID, scope, zoneID, recordName, reason, clientID, payload, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [inbox, seq, n.nid, n.subscriptionID, n.scope, n.zoneID, n.recordName, n.reason.map { Int64($0) }, n.clientID, n.payload, n.at]
            )
        }
        let keep = last - Int64(queueMax) + 1
        if keptFrom < keep {
            try run("DELETE FROM notification WHERE inboxID = ? AND seq < ?", [inbox, keep])
            try run("UPDATE notify_inbox SET keptFrom = ?, dropped = dropped + ? WHERE id = ?", [keep, keep - keptFrom, inbox])
        }
        return (inbox, last)
    }

    // MARK: Device tokens

    /// Records a device token; its cursor starts at its account's inbox as it is now (no
    /// backlog from before it existed). Past `maxPerUser` the account's least recently polled
    /// tokens go.
    package func insertDeviceToken(_ token: DeviceTokenRow, maxPerUser: Int) throws {
        try run(
            "INSERT INTO notify_inbox (accountID, container, environment, seq, keptFrom, dropped) VALUES (?, ?, ?, 0, 1, 0) ON CONFLICT DO NOTHING",
            [token.accountID, token.container, token.environment]
        )
        let current =
            try fetchInteger(
                "SELECT seq FROM notify_inbox WHERE accountID = ? AND container = ? AND environment = ?",
                [token.accountID, token.container, token.environment]
            ) ?? 0
        try run(
            """
            INSERT INTO device_token (tokenHash, pollHash, accountID, credentialHash, container, environment, apnsEnvironment, clientID,
                delivered, dropped, createdAt, lastPollAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
            """,
            [
                token.tokenHash, token.pollHash, token.accountID, token.credentialHash, token.container, token.environment,
                token.apnsEnvironment, token.clientID, current, token.createdAt, token.createdAt,
            ]
        )
        try run(
            """
            DELETE FROM device_token WHERE id IN (
                SELECT id FROM device_token WHERE accountID = ? AND container = ? AND environment = ?
                ORDER BY lastPollAt DESC, id DESC LIMIT -1 OFFSET ?)
            """.replacingOccurrences(of: "LIMIT -1 OFFSET ?", with: isDriver ? "OFFSET ?" : "LIMIT -1 OFFSET ?"),
            [token.accountID, token.container, token.environment, Int64(maxPerUser)]
        )
    }

    /// Binds the token whose hash is `tokenHash` to the web auth token `credentialHash` and
    /// updates what it says; false when no token of `account` in that container has that hash.
    package func registerDeviceToken(
        tokenHash: String,
        account: Int64,
        container: ContainerID,
        credentialHash: String?,
        apnsEnvironment: String,
        clientID: String?
    ) throws -> Bool {
        try run(
            """
            UPDATE device_token SET credentialHash = ?, apnsEnvironment = ?, clientID = ?
            WHERE tokenHash = ? AND accountID = ? AND container = ? AND environment = ?
            """,
            [credentialHash, apnsEnvironment, clientID, tokenHash, account, container.identifier, container.environment.rawValue]
        ) == 1
    }

    /// The token polled with the secret whose hash is `pollHash`, with its inbox as it is now;
    /// nil when there is none, or the web auth token that made it is gone (revoked).
    package func pollingToken(pollHash: String) throws -> PollingToken? {
        try fetchOne(
            """
            SELECT t.id, t.accountID, t.container, t.environment, t.clientID, t.delivered, i.id, i.seq, i.keptFrom, t.lastPollAt
            FROM device_token t LEFT JOIN notify_inbox i ON i.accountID = t.accountID AND i.container = t.container AND i.environment = t.environment
            WHERE t.pollHash = ? AND (t.credentialHash IS NULL OR EXISTS (SELECT 1 FROM credential c WHERE c.hash = t.credentialHash))
            """,
            [pollHash],
            table: "device_token",
            keyAt: 0
        ) {
            PollingToken(
                id: try $0.integer(0, "id"),
                accountID: try $0.integer(1, "accountID"),
                container: try $0.text(2, "container"),
                environment: try $0.text(3, "environment"),
                clientID: try $0.optionalText(4, "clientID"),
                delivered: try $0.integer(5, "delivered"),
                inbox: try $0.optionalInteger(6, "id"),
                seq: try $0.optionalInteger(7, "seq") ?? 0,
                keptFrom: try $0.optionalInteger(8, "keptFrom") ?? 1,
                lastPollAt: try $0.real(9, "lastPollAt")
            )
        }
    }

    /// The inbox of `account` in one container, and its last position; nil before its first.
    package func inbox(account: Int64, container: String, environment: String) throws -> (id: Int64, seq: Int64)? {
        try fetchOne(
            "SELECT id, seq FROM notify_inbox WHERE accountID = ? AND container = ? AND environment = ?",
            [account, container, environment],
            table: "notify_inbox",
            keyAt: 0
        ) { (try $0.integer(0, "id"), try $0.integer(1, "seq")) }
    }

    /// Inbox `inbox`'s notifications after position `after`, in order, at most `limit`.
    package func notifications(inbox: Int64, after: Int64, limit: Int) throws -> [StoredNotification] {
        try fetchAll(
            """
            SELECT seq, scope, zoneID, recordName, reason, clientID, payload FROM notification
            WHERE inboxID = ? AND seq > ? ORDER BY seq LIMIT ?
            """,
            [inbox, after, Int64(limit)],
            table: "notification",
            keyAt: 0
        ) {
            StoredNotification(
                seq: try $0.integer(0, "seq"),
                scope: try $0.text(1, "scope"),
                zoneID: try $0.integer(2, "zoneID"),
                recordName: try $0.optionalText(3, "recordName"),
                reason: try $0.optionalInteger(4, "reason").map(Int.init),
                clientID: try $0.optionalText(5, "clientID"),
                payload: try $0.text(6, "payload")
            )
        }
    }

    /// Moves token `token`'s cursor from `from` to `to` (`dropped`: positions it never got,
    /// pruned before it came), when no other poll moved it first; whether this one did.
    package func moveDelivered(token: Int64, from: Int64, to: Int64, dropped: Int64, at time: Double) throws -> Bool {
        try run(
            "UPDATE device_token SET delivered = ?, dropped = dropped + ?, lastPollAt = ? WHERE id = ? AND delivered = ?",
            [to, dropped, time, token, from]
        ) == 1
    }

    /// Notes that token `id` was polled at `time`.
    package func touchDeviceToken(_ id: Int64, at time: Double) throws {
        try run("UPDATE device_token SET lastPollAt = ? WHERE id = ?", [time, id])
    }

    /// Each inbox's last position, of those of `ids` that exist.
    package func inboxPositions(_ ids: [Int64]) throws -> [Int64: Int64] {
        var positions: [Int64: Int64] = [:]
        for start in stride(from: 0, to: ids.count, by: 400) {
            let chunk = Array(ids[start..<min(ids.count, start + 400)])
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            for (id, seq) in try fetchAll(
                "SELECT id, seq FROM notify_inbox WHERE id IN (\(marks))",
                StoreArguments(chunk.map(\.databaseValue)),
                table: "notify_inbox",
                keyAt: 0,
                { (try $0.integer(0, "id"), try $0.integer(1, "seq")) }
            ) { positions[id] = seq }
        }
        return positions
    }

    /// Removes tokens last polled before `before`, at most `limit`; how many.
    @discardableResult
    package func pruneDeviceTokens(idleSince before: Double, limit: Int) throws -> Int {
        try run(
            "DELETE FROM device_token WHERE id IN (SELECT id FROM device_token WHERE lastPollAt < ? ORDER BY lastPollAt LIMIT ?)",
            [before, Int64(limit)]
        )
    }

    /// What `store info` tells of notifications: subscriptions, tokens, notifications kept, dropped.
    package func notificationCounts() throws -> (subscriptions: Int, tokens: Int, queued: Int, dropped: Int) {
        (
            Int(try fetchInteger("SELECT COUNT(*) FROM subscription") ?? 0),
            Int(try fetchInteger("SELECT COUNT(*) FROM device_token") ?? 0),
            Int(try fetchInteger("SELECT COUNT(*) FROM notification") ?? 0),
            Int(try fetchInteger("SELECT CAST(COALESCE(SUM(dropped), 0) AS BIGINT) FROM notify_inbox") ?? 0)
        )
    }
}

/// The writer's client, for `clientId` (SPEC §20 N2: a device is not told of its own change
/// when it asks so): bound by the server around a request's engine work.
package enum WriteOrigin {
    @TaskLocal package static var clientID: String?
}

/// A subscription as stored.
package struct SubscriptionRow: Sendable, Equatable {
    package var id: Int64
    package var accountID: Int64
    package var container: String
    package var environment: String
    package var scope: String
    package var subscriptionID: String
    package var kind: String
    package var zoneID: Int64?
    package var zoneName: String?
    package var zoneOwner: String?
    package var recordType: String?
    package var predicate: String?
    package var firesOn: Int
    package var firesOnce: Bool
    package var info: String
    package var wire: String?
    package var createdAt: Double
    /// What evaluating it costs each change it may fire for (1 plus its predicate's parts).
    package var cost: Int
}

/// A zone as the dispatcher reads it.
package struct NotifyZone: Sendable {
    package let id: Int64
    package let container: String
    package let environment: String
    package let scope: String
    package let name: String
    package let ownerID: Int64
    package let ownerName: String?
}

/// A change waiting in the outbox.
package struct NotifyChangeRow: Sendable {
    package let id: Int64
    package let name: String
    package let type: String
    package let reason: Int
    package let seq: Int64
    package let writerID: Int64?
    package let clientID: String?
    package let fields: String?
    package let createdBy: Int64?
    package let createdAt: Double?
    package let at: Double
    package let writerName: String?
    package let creatorName: String?
    /// The viewers the change log sent this change to: the only participants a shared-database
    /// subscription may tell of it.
    package let viewers: Set<Int64>
    /// The subscriptions (by row ID) a dispatch evaluated for it already: a change whose
    /// subscriptions cost more than one job's budget is taken up where the last job stopped.
    package let progress: Int64
}

/// A notification to append to an inbox.
package struct NotificationRow: Sendable {
    package let nid: String
    package let subscriptionID: String
    package let scope: String
    package let zoneID: Int64
    package let recordName: String?
    package let reason: Int?
    package let clientID: String?
    package let payload: String
    package let at: Double
}

/// A notification as an inbox keeps it.
package struct StoredNotification: Sendable {
    package let seq: Int64
    package let scope: String
    package let zoneID: Int64
    package let recordName: String?
    package let reason: Int?
    package let clientID: String?
    package let payload: String
}

/// A device token to record.
package struct DeviceTokenRow: Sendable {
    package let tokenHash: String
    package let pollHash: String
    package let accountID: Int64
    package let credentialHash: String?
    package let container: String
    package let environment: String
    package let apnsEnvironment: String
    package let clientID: String?
    package let createdAt: Double
}

/// A token being polled, and its inbox.
package struct PollingToken: Sendable {
    package let id: Int64
    package let accountID: Int64
    package let container: String
    package let environment: String
    package let clientID: String?
    package let delivered: Int64
    package let inbox: Int64?
    package let seq: Int64
    package let keptFrom: Int64
    /// When it was last polled (seconds since 1970): what eviction and idle pruning go by.
    package let lastPollAt: Double
}
