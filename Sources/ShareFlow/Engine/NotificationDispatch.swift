import Foundation

/// What one dispatch did.
package struct DispatchReport: Sendable {
    /// The inboxes that got notifications (a server wakes the polls waiting on them).
    package var inboxes: Set<Int64> = []
    /// How many notifications were queued.
    package var notified = 0
    /// Whether changes are left in the outbox for another job (the budget ran out).
    package var more = false
}

/// Evaluating subscriptions after a change commits (SPEC §20 N2).
///
/// A record change in a zone some subscription may fire for leaves one row in the outbox,
/// written in its own transaction (`StoreTransaction.noteForSubscriptions`): a write costs the
/// same however many subscriptions its zone has, and a crash after the commit loses nothing.
/// A dispatch takes one zone's rows in commit order under that zone's lock, decides who is
/// told (R12, R15, R37: the change log's visibility), evaluates query subscriptions on the
/// record as saved, and appends to each subscriber's inbox in the same transaction that
/// removes the rows. Each job is bounded (`changesPerJob`, `evaluationsPerJob`).
extension Engine {
    /// Dispatches this process's waiting changes (and, `takeover`, any other's older than
    /// `notifications.takeoverSeconds`), at most one budget's worth; then calls `notified`.
    @discardableResult
    package func dispatchNotifications(takeover: Bool = false) throws -> DispatchReport {
        let options = self.options.notifications
        let before = takeover ? EngineClock.seconds - options.takeoverSeconds : -Double.greatestFiniteMagnitude
        // Zones in turn, from the one after the last a job dispatched, and at most a quarter of
        // a job's budget each: one zone's backlog never holds up another zone's changes.
        let after = dispatchCursor
        var zones = try reading { try $0.outboxZones(node: StoreTransaction.nodeID, before: before, after: after, limit: 16) }
        if zones.count < 16 {
            let wrapped = try reading { try $0.outboxZones(node: StoreTransaction.nodeID, before: before, after: Int64.min, limit: 16) }
            zones += wrapped.filter { !zones.contains($0) }.prefix(16 - zones.count)
        }
        var report = DispatchReport()
        var units = 0
        let share = max(1, options.evaluationsPerJob / 4)
        for zoneRowID in zones {
            guard units < options.evaluationsPerJob else {
                report.more = true
                break
            }
            dispatchCursor = zoneRowID
            guard let zone = try reading({ try $0.notifyZone(zoneRowID) }) else { continue }
            let container = ContainerID(zone.container, CloudEnvironment(rawValue: zone.environment) ?? .development)
            let key = ZoneLockKey(
                container: container,
                ownerName: zone.scope == "public" ? Engine.publicOwnerName : zone.ownerName ?? "",
                zoneName: zone.name
            )
            let (part, left) = try transaction(scope: store.writersRunAtOnce ? .zones([key]) : .wholeStore) { db in
                try dispatch(zone: zone, container: container, budget: min(share, options.evaluationsPerJob - units), db: db)
            }
            units += part.units
            report.inboxes.formUnion(part.inboxes)
            report.notified += part.notified
            if left { report.more = true }
        }
        if zones.count == 16 { report.more = true }
        if !report.inboxes.isEmpty { notified?(report.inboxes) }
        return report
    }

    /// A subscription a job may fire: its row, itself, and for a query its compiled predicate
    /// and what evaluating it costs.
    private struct Candidate {
        let row: SubscriptionRow
        let subscription: Subscription
        let matches: (((String) -> FieldValue?) -> Bool)?
        let cost: Int
    }

    /// What a dispatch of one zone did.
    private struct ZoneDispatch {
        var inboxes: Set<Int64> = []
        var notified = 0
        var units = 0
    }

    private func dispatch(zone: NotifyZone, container: ContainerID, budget: Int, db: StoreTransaction) throws -> (ZoneDispatch, Bool) {
        let options = self.options.notifications
        let changes = try db.outboxChanges(zone: zone.id, limit: options.changesPerJob)
        guard !changes.isEmpty else { return (ZoneDispatch(), false) }
        // Each candidate read and compiled once a job: its predicate's matcher and its cost.
        var subscriptions = try db.candidateSubscriptions(for: zone).compactMap { row -> Candidate? in
            guard let s = try? Engine.subscription(row) else { return nil }
            if case .query(_, let predicate, _, _, _) = s.kind {
                return Candidate(row: row, subscription: s, matches: predicate.compiled(), cost: row.cost)
            }
            return Candidate(row: row, subscription: s, matches: nil, cost: 0)
        }
        var done = ZoneDispatch()
        var queued: [Int64: [(NotificationRow, SubscriptionNotification, Int64?, Subscription)]] = [:]
        var firedOnce = Set<Int64>()
        var firedZone = Set<Int64>()
        // The last change done whole (removed from the outbox), and one left half done.
        var last: Int64?
        var stopped: (change: Int64, through: Int64)?
        let started = DispatchTime.now().uptimeNanoseconds
        func spent() -> Bool {
            done.units >= budget || DispatchTime.now().uptimeNanoseconds - started > Engine.dispatchNanoseconds
        }
        let zoneOwner = zone.scope == "public" ? Engine.publicOwnerName : zone.ownerName ?? ""
        changes: for change in changes {
            if done.units > 0, spent() { break }
            var values: [String: FieldValue]?
            func value(_ key: String) -> FieldValue? {
                switch key {
                case "recordName", "recordID": return .string(change.name)
                case "modificationDate": return .date(Date(timeIntervalSince1970: change.at))
                case "creationDate": return change.createdAt.map { .date(Date(timeIntervalSince1970: $0)) }
                case "creatorUserRecordID": return change.creatorName.map { .string($0) }
                case "lastModifiedUserRecordID": return change.writerName.map { .string($0) }
                default:
                    if values == nil { values = change.fields.flatMap { try? StoredFields.decode($0) } ?? [:] }
                    return values?[key]
                }
            }
            let reason = SubscriptionNotification.Reason(rawValue: change.reason) ?? .updated
            // The record's words and lists, read once for every subscription of this change.
            let memo = RecordMemo()
            for candidate in subscriptions where candidate.row.id > change.progress && !firedOnce.contains(candidate.row.id) {
                // A job's budget (predicate parts, time) may end inside one change: the next
                // job takes it up at the next subscription (`progress`), never from the start.
                if done.units > 0, spent() {
                    stopped = (change.id, candidate.row.id - 1)
                    break changes
                }
                let (row, subscription) = (candidate.row, candidate.subscription)
                done.units += 1
                // Who is told (R12, R15, R37): the owner of a private zone; in the shared
                // database, a viewer the change log sent this very change to, as it was
                // committed; anyone in public.
                if row.scope == "shared" {
                    guard change.viewers.contains(row.accountID) else { continue }
                } else if row.scope == "private" {
                    guard zone.scope == "private", row.accountID == zone.ownerID else { continue }
                } else {
                    guard zone.scope == "public" else { continue }
                }
                // Decided first; the notification is made only for what fires.
                switch subscription.kind {
                case .zone, .database:
                    // One notification per subscription and job: "this zone changed".
                    guard firedZone.insert(row.id).inserted else { continue }
                case .query(let recordType, _, _, let firesOn, _):
                    guard recordType == change.type else { continue }
                    let bit: Subscription.FiresOn = reason == .created ? .create : reason == .updated ? .update : .delete
                    guard firesOn.contains(bit) else { continue }
                    done.units += candidate.cost
                    guard RecordMemo.$current.withValue(memo, operation: { candidate.matches?(value) ?? true }) else { continue }
                }
                var notification = SubscriptionNotification(
                    notificationID: UUID().uuidString,
                    subscriptionID: row.subscriptionID,
                    containerIdentifier: zone.container,
                    database: row.scope,
                    zoneName: zone.name,
                    zoneOwnerName: zoneOwner,
                    info: subscription.notificationInfo
                )
                if case .query(_, _, _, _, let once) = subscription.kind {
                    // Fires once: claimed by deleting it here, so two nodes dispatching two of
                    // its zones at once fire it once (the second waits on the row, then finds
                    // it gone).
                    if once {
                        firedOnce.insert(row.id)
                        guard try db.claimSubscription(row: row.id) else { continue }
                    }
                    notification.reason = reason
                    notification.recordName = change.name
                    var fields: [String: FieldValue] = [:]
                    for name in subscription.notificationInfo.additionalFields ?? [] {
                        if let v = value(name) { fields[name] = v }
                    }
                    notification.additionalFields = fields
                    if let args = subscription.notificationInfo.alertLocalizationArgs {
                        notification.alertArguments = args.map { name in value(name).map(Engine.alertText) ?? "" }
                    }
                }
                // Kept as it will be sent: what a push carries (APNs' 4 KiB), never the record's
                // whole fields (a 1 MB field named by every subscription of a zone filled disks).
                let payload = try Engine.fitted(&notification)
                queued[row.accountID, default: []].append(
                    (
                        NotificationRow(
                            nid: notification.notificationID,
                            subscriptionID: row.subscriptionID,
                            scope: row.scope,
                            zoneID: zone.id,
                            recordName: notification.recordName,
                            reason: notification.reason?.rawValue,
                            // Only the writer's own devices are spared their own change: a
                            // clientId is no secret, and another user's write naming it must
                            // not silence them.
                            clientID: change.writerID == row.accountID ? change.clientID : nil,
                            payload: payload,
                            at: change.at
                        ),
                        notification,
                        change.writerID,
                        subscription
                    )
                )
            }
            last = change.id
        }
        if let last { try db.removeOutbox(zone: zone.id, through: last) }
        if let stopped { try db.noteProgress(change: stopped.change, through: stopped.through) }
        subscriptions.removeAll()
        let observed = events.hasObservers(.subscriptionFired)
        // Inboxes in one order (account), so two dispatches of different zones wait on each
        // other's inbox rows in a line, never in a circle.
        for account in queued.keys.sorted() {
            let items = queued[account]!
            let (inbox, _) = try db.appendNotifications(
                account: account,
                container: zone.container,
                environment: zone.environment,
                items.map(\.0),
                queueMax: options.queueMax
            )
            done.inboxes.insert(inbox)
            done.notified += items.count
            guard observed, let owner = try? loadAccount(id: account, db: db) else { continue }
            for (_, notification, writer, subscription) in items {
                let caller = writer.flatMap { try? loadAccount(id: $0, db: db) }
                var event = Event(.subscriptionFired, caller: caller, container: zone.container)
                event.zoneID = notification.zoneID
                event.database = notification.database
                if let name = notification.recordName { event.recordID = RecordID(recordName: name, zoneID: notification.zoneID) }
                event.firing = SubscriptionFiring(subscription: subscription, owner: owner, notification: notification)
                emit(event)
            }
        }
        return (done, stopped != nil || changes.last!.id != last)
    }

    /// The longest one dispatch job runs before it lets other work have the engine (50 ms).
    static let dispatchNanoseconds: UInt64 = 50_000_000

    /// The most bytes a notification is kept and sent in (APNs' payload limit).
    static let notificationBytes = 4096

    /// `n` made to fit `notificationBytes` as JSON: alert arguments cut to 256 bytes each,
    /// assets left out, then fields dropped from the end of `additionalFields`; its JSON.
    static func fitted(_ n: inout SubscriptionNotification) throws -> String {
        n.alertArguments = n.alertArguments?.map { String($0.utf8.prefix(256)) ?? "" }
        n.additionalFields = n.additionalFields?.filter { !$0.value.holdsAsset }
        var order = (n.info.additionalFields ?? []).filter { n.additionalFields?[$0] != nil }
        while true {
            let json = String(decoding: try JSONEncoder().encode(n), as: UTF8.self)
            guard json.utf8.count > notificationBytes, let last = order.popLast() else { return json }
            n.additionalFields?[last] = nil
        }
    }

    /// A field's value as an alert's argument: text as it is, numbers and dates written out.
    static func alertText(_ value: FieldValue) -> String {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .double(let d): return String(d)
        case .boolean(let b): return String(b)
        case .date(let d): return ISO8601DateFormatter().string(from: d)
        case .reference(let id, _): return id.recordName
        default: return value.description
        }
    }

    /// After a commit that left changes in the outbox: dispatch them now, or tell the server's
    /// dispatcher (`notifications.dispatch`). A `subscription.fired` observer's own writes are
    /// taken by the loop already running.
    func outboxFilled() {
        switch options.notifications.dispatch {
        case .deferred:
            notificationsPending?()
        case .afterCommit:
            // An observer's own write, inside the loop below: the loop takes it next.
            guard !dispatchingNotifications else {
                outboxRefilled = true
                return
            }
            dispatchingNotifications = true
            defer { dispatchingNotifications = false }
            for _ in 0..<64 {
                do {
                    outboxRefilled = false
                    let report = try dispatchNotifications()
                    guard report.more || outboxRefilled || store.takeOutboxWritten() else { return }
                } catch {
                    // Left in the outbox: the next dispatch (or another process's) takes it.
                    logger.warning("subscriptions were not evaluated after a commit (\(error)); the changes wait in the outbox")
                    return
                }
            }
        }
    }
}
