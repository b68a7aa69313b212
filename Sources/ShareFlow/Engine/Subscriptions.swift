import Foundation

/// Subscriptions in a database (SPEC §20 N1).
///
/// ```swift
/// let db = try engine.session(for: "alice@example.com").container("iCloud.com.example.app").privateCloudDatabase
/// try db.save(.zone(try db.zoneID("Trips"), id: "trips"))
/// let mine = try db.fetchAllSubscriptions()        // [zone subscription trips (Trips/_abc…)]
/// try db.deleteSubscription(withID: "trips")
/// ```
extension CloudDatabase {
    /// Saves `subscription` as the caller's (replacing theirs of the same ID here) and returns
    /// it as stored. A zone the caller may not see is `zoneNotFound`, as everywhere (R27, R37).
    @discardableResult
    public func save(_ subscription: Subscription) throws -> Subscription {
        try engine.saveSubscription(subscription, wire: nil, replacing: true, in: self).subscription
    }

    /// The caller's subscriptions in this database, oldest first.
    public func fetchAllSubscriptions() throws -> [Subscription] {
        try engine.fetchSubscriptions(in: self)
    }

    /// The caller's subscription `subscriptionID`, or `unknownItem`.
    public func fetchSubscription(withID subscriptionID: String) throws -> Subscription {
        try engine.fetchSubscription(subscriptionID, in: self).subscription
    }

    /// Deletes the caller's subscription `subscriptionID`, or `unknownItem`.
    public func deleteSubscription(withID subscriptionID: String) throws {
        try engine.deleteSubscription(subscriptionID, in: self)
    }
}

/// A subscription as saved, with the HTTP form it was made from (`query` as sent), if any.
package struct SavedSubscription: Sendable {
    package let subscription: Subscription
    package let wire: String?
}

extension Engine {
    /// Saves `subscription` for the caller; `replacing` false keeps one already saved under the
    /// same ID and returns it (HTTP `create`: Apple's service answers with the existing one).
    package func saveSubscription(
        _ subscription: Subscription,
        wire: String?,
        replacing: Bool,
        in database: CloudDatabase
    ) throws -> SavedSubscription {
        try Engine.requireSignedIn(database)
        try Engine.check(subscription, in: database.databaseScope)
        let caller = database.container.session.accountID
        let container = database.container.containerID
        let scope = database.databaseScope.rawValue
        let zones = subscription.zoneID.map { [$0] } ?? []
        return try transaction(scope: try writeScope(zones, in: database)) { db in
            if !replacing, let kept = try db.subscription(account: caller, container: container, scope: scope, id: subscription.subscriptionID) {
                return try Engine.saved(kept)
            }
            var zoneRow: ZoneRow?
            if let zoneID = subscription.zoneID {
                let account = try loadAccount(id: caller, db: db)
                zoneRow = try zone(for: zoneID, in: database, caller: account, db: db)
            }
            let options = self.options.notifications
            let existing = try db.subscription(account: caller, container: container, scope: scope, id: subscription.subscriptionID)
            let counts = try db.subscriptionCounts(account: caller, container: container)
            if existing == nil, counts.all >= options.maxSubscriptionsPerUser {
                throw ShareFlowError(
                    .limitExceeded,
                    "subscription \(subscription.subscriptionID): a user has at most \(options.maxSubscriptionsPerUser) subscriptions in a container (notifications.maxSubscriptionsPerUser); delete one first"
                )
            }
            if zoneRow == nil, existing?.zoneID != nil || existing == nil, counts.zoneless >= options.maxZonelessPerUser {
                throw ShareFlowError(
                    .limitExceeded,
                    "subscription \(subscription.subscriptionID): a user has at most \(options.maxZonelessPerUser) database and zone-wide subscriptions in a container (notifications.maxZonelessPerUser)"
                )
            }
            let row = try Engine.row(
                for: subscription,
                account: caller,
                container: container,
                scope: scope,
                zone: zoneRow,
                wire: wire,
                createdAt: existing?.createdAt ?? EngineClock.seconds
            )
            // Every change in a zone evaluates every subscription that may fire for it: what
            // they cost together is bounded, so one user's subscriptions cannot make each
            // write there cost the node seconds (SPEC §20 N2).
            let replaced = existing.map { $0.zoneID == row.zoneID ? $0.cost : 0 } ?? 0
            if let zoneRow {
                let on = try db.subscriptionCount(zone: zoneRow.id)
                if existing?.zoneID != zoneRow.id, on.count >= options.maxSubscriptionsPerZone {
                    throw ShareFlowError(
                        .limitExceeded,
                        "subscription \(subscription.subscriptionID): zone \(zoneRow.zoneID.zoneName) has \(options.maxSubscriptionsPerZone) subscriptions already (notifications.maxSubscriptionsPerZone)"
                    )
                }
                if on.cost - replaced + row.cost > options.maxCostPerZone {
                    throw ShareFlowError(
                        .limitExceeded,
                        "subscription \(subscription.subscriptionID): the subscriptions of zone \(zoneRow.zoneID.zoneName) would cost \(on.cost - replaced + row.cost) units each change (their predicates' parts and values), past \(options.maxCostPerZone) (notifications.maxCostPerZone); simplify its predicate"
                    )
                }
            } else if try db.zonelessCost(account: caller, container: container) - replaced + row.cost > options.maxZonelessCostPerUser {
                throw ShareFlowError(
                    .limitExceeded,
                    "subscription \(subscription.subscriptionID): a user's database and zone-wide subscriptions cost at most \(options.maxZonelessCostPerUser) units each change (notifications.maxZonelessCostPerUser); simplify its predicate"
                )
            }
            return try Engine.saved(try db.saveSubscription(row))
        }
    }

    func fetchSubscriptions(in database: CloudDatabase) throws -> [Subscription] {
        try savedSubscriptions(in: database).map(\.subscription)
    }

    /// The caller's subscriptions in `database`, with their HTTP forms.
    package func savedSubscriptions(in database: CloudDatabase) throws -> [SavedSubscription] {
        try Engine.requireSignedIn(database)
        let caller = database.container.session.accountID
        return try reading { db in
            try db.subscriptions(
                account: caller,
                container: database.container.containerID,
                scope: database.databaseScope.rawValue,
                limit: options.notifications.maxSubscriptionsPerUser
            ).map(Engine.saved)
        }
    }

    /// The caller's subscription `subscriptionID` in `database`, or `unknownItem`.
    package func fetchSubscription(_ subscriptionID: String, in database: CloudDatabase) throws -> SavedSubscription {
        try Engine.requireSignedIn(database)
        let caller = database.container.session.accountID
        guard
            let row = try reading({ db in
                try db.subscription(
                    account: caller,
                    container: database.container.containerID,
                    scope: database.databaseScope.rawValue,
                    id: subscriptionID
                )
            })
        else { throw ShareFlowError(.unknownItem, "subscription \(Naming.printable(subscriptionID)) does not exist in this database") }
        return try Engine.saved(row)
    }

    package func deleteSubscription(_ subscriptionID: String, in database: CloudDatabase) throws {
        try Engine.requireSignedIn(database)
        let caller = database.container.session.accountID
        let removed = try transaction(scope: .zones([])) { db in
            try db.deleteSubscription(
                account: caller,
                container: database.container.containerID,
                scope: database.databaseScope.rawValue,
                id: subscriptionID
            )
        }
        guard removed else { throw ShareFlowError(.unknownItem, "subscription \(Naming.printable(subscriptionID)) does not exist in this database") }
    }

    /// What a subscription may be before anything is read (SPEC §20 N1).
    static func check(_ s: Subscription, in scope: DatabaseScope) throws {
        let name = "subscription \(Naming.printable(s.subscriptionID))"
        guard !s.subscriptionID.isEmpty, s.subscriptionID.utf8.count <= 255,
            !s.subscriptionID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw ShareFlowError(.invalidArguments, "\(name): subscriptionID must be 1–255 bytes without control characters")
        }
        switch s.kind {
        case .query(let recordType, let predicate, let zoneID, let firesOn, _):
            try Naming.check(recordType: recordType)
            guard !firesOn.isEmpty, Subscription.FiresOn.all.isSuperset(of: firesOn) else {
                throw ShareFlowError(.invalidArguments, "\(name): firesOn names none of create, update, delete")
            }
            let cost = predicate.cost
            guard cost.parts <= Subscription.maxPredicateCost, cost.depth <= 32 else {
                throw ShareFlowError(
                    .limitExceeded,
                    "\(name): its predicate has \(cost.parts) parts and values, \(cost.depth) deep; at most \(Subscription.maxPredicateCost), 32 deep (each is evaluated for every change)"
                )
            }
            if scope == .public, let zoneID, !zoneID.isDefaultZone {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneID.zoneName): the public database has only the default zone")
            }
        case .zone(let zoneID):
            guard scope != .public else {
                throw ShareFlowError(.invalidArguments, "\(name): the public database takes query subscriptions only")
            }
            guard !zoneID.isDefaultZone else {
                throw ShareFlowError(.invalidArguments, "\(name): a zone subscription needs a custom zone, not the default zone (as CloudKit)")
            }
        case .database:
            guard scope != .public else {
                throw ShareFlowError(.invalidArguments, "\(name): the public database takes query subscriptions only")
            }
        }
        let info = s.notificationInfo
        let texts =
            [info.alertBody, info.alertLocalizationKey, info.alertActionLocalizationKey, info.alertLaunchImage, info.soundName, info.category]
            .compactMap { $0 } + (info.alertLocalizationArgs ?? []) + (info.additionalFields ?? [])
        guard texts.allSatisfy({ $0.utf8.count <= NotificationInfo.maxTextBytes }) else {
            throw ShareFlowError(.invalidArguments, "\(name): a notificationInfo text is longer than \(NotificationInfo.maxTextBytes) bytes")
        }
        guard (info.additionalFields ?? []).count <= Subscription.maxAdditionalFields,
            (info.alertLocalizationArgs ?? []).count <= Subscription.maxAdditionalFields
        else {
            throw ShareFlowError(
                .limitExceeded,
                "\(name): notificationInfo names at most \(Subscription.maxAdditionalFields) additionalFields and alertLocalizationArgs"
            )
        }
    }

    static func row(
        for s: Subscription,
        account: Int64,
        container: ContainerID,
        scope: String,
        zone: ZoneRow?,
        wire: String?,
        createdAt: Double
    ) throws -> SubscriptionRow {
        var recordType: String?
        var predicate: String?
        var firesOn = 0
        var firesOnce = false
        var cost = 1
        if case .query(let type, let p, _, let fires, let once) = s.kind {
            recordType = type
            predicate = String(decoding: try JSONEncoder().encode(p), as: UTF8.self)
            firesOn = fires.rawValue
            firesOnce = once
            cost += p.cost.parts
        }
        // What a row keeps is bounded whatever its parts' count: every dispatch job of its zone
        // reads it.
        for (what, text) in [("predicate", predicate), ("query as sent", wire)] {
            if let text, text.utf8.count > Subscription.maxStoredBytes {
                throw ShareFlowError(
                    .limitExceeded,
                    "subscription \(Naming.printable(s.subscriptionID)): its \(what) is \(text.utf8.count) bytes; at most \(Subscription.maxStoredBytes)"
                )
            }
        }
        return SubscriptionRow(
            id: 0,
            accountID: account,
            container: container.identifier,
            environment: container.environment.rawValue,
            scope: scope,
            subscriptionID: s.subscriptionID,
            kind: s.kindName,
            zoneID: zone?.id,
            zoneName: zone?.zoneID.zoneName,
            zoneOwner: zone.map { $0.isPublic ? Engine.publicOwnerName : $0.zoneID.ownerName },
            recordType: recordType,
            predicate: predicate,
            firesOn: firesOn,
            firesOnce: firesOnce,
            info: String(decoding: try JSONEncoder().encode(s.notificationInfo), as: UTF8.self),
            wire: wire,
            createdAt: createdAt,
            cost: cost
        )
    }

    /// The subscription a stored row holds.
    static func saved(_ row: SubscriptionRow) throws -> SavedSubscription {
        SavedSubscription(subscription: try subscription(row), wire: row.wire)
    }

    static func subscription(_ row: SubscriptionRow) throws -> Subscription {
        func damaged(_ what: String) -> ShareFlowError {
            ShareFlowError(.serviceUnavailable, "subscription row \(row.id): its \(what) is damaged").forOperator()
        }
        guard let info = try? JSONDecoder().decode(NotificationInfo.self, from: Data(row.info.utf8)) else { throw damaged("notificationInfo") }
        let zoneID = row.zoneName.map { RecordZoneID(zoneName: $0, ownerName: row.zoneOwner ?? RecordZoneID.currentUserName) }
        let kind: Subscription.Kind
        switch row.kind {
        case "query":
            guard let type = row.recordType, let text = row.predicate,
                let predicate = try? JSONDecoder().decode(Predicate.self, from: Data(text.utf8))
            else { throw damaged("query") }
            kind = .query(
                recordType: type,
                predicate: predicate,
                zoneID: zoneID,
                firesOn: Subscription.FiresOn(rawValue: row.firesOn),
                firesOnce: row.firesOnce
            )
        case "zone":
            guard let zoneID else { throw damaged("zone") }
            kind = .zone(zoneID)
        case "database":
            kind = .database
        default:
            throw damaged("kind")
        }
        return Subscription(kind, id: row.subscriptionID, info: info)
    }
}
