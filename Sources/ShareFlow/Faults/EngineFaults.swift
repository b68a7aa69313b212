import Foundation

/// The request in progress on a thread, as fault injection sees it (SPEC §15): opened where a
/// request enters the engine — an operation run from its queue, a server's request, a direct
/// call of a database's method — and asked by every engine call inside it, so one request is
/// decided once however many calls it makes. Unchecked: a server makes it on a connection's
/// task, hands it to the engine's thread and reads it back after, one after the other.
public final class FaultScope: @unchecked Sendable {
    /// The native operation's name, and over HTTP the subpath, for the per-item rules.
    public let operation: String
    /// Over HTTP, the request's subpath; nil for a native request.
    public let subpath: String?
    /// Before commit: what every engine call of the request throws instead of running.
    var failure: ShareFlowError?
    /// After commit: what every engine call of the request throws once it has run.
    var afterCommit: ShareFlowError?
    /// The faults the engine injected in this request (the access log's `fault=`).
    public internal(set) var injected: [String] = []
    /// Over HTTP: the delays of the request's items and zones, for the server to sleep on the
    /// connection (at most `maxDelayMs` in all).
    public internal(set) var delayMs: Double = 0
    /// The most a request's item and zone delays come to, in milliseconds.
    public static let maxDelayMs: Double = 60_000

    /// The decisions of this request's items and zones, in the order they were asked: a request
    /// run again (its first write deferred, `Store.writeWait`) meets the same ones and never the
    /// rules again, so a rule's count is spent, its history written and its delay taken once.
    var decisions: [(key: String, decision: FaultInjector.Decision?)] = []
    /// How many of `decisions` this run of the request has met so far.
    var replayed = 0

    /// Whether the engine asks any rule inside this scope: its request-level fault is decided
    /// already (a scope is open), and false asks no per-item, per-zone or database-feed rule
    /// either, nor opens a request of its own for a callback. Two scopes ask none:
    /// - a change stream's polls: the stream is one request, decided when it opens; its
    ///   polls, as many as time makes, are no requests to fail, delay or purge (a purge
    ///   reported at each poll would be announced again and again, without end);
    /// - `fault.injected`'s observers: an observer that calls the engine would otherwise be
    ///   injected again, announce again, and so on (on a server, each level's delay slept on
    ///   the engine's thread, under its lock).
    public let asksRules: Bool

    /// A request the engine opened itself, on the caller's thread (an operation from its
    /// queue, a database's method called directly): the only kind a callback leaves
    /// (`outside`). A server's request stays open in its callbacks: what they do is decided on
    /// the connection, never on the engine's thread.
    let isNative: Bool

    /// A scope a server opens for its request (`subpath` set), or one that asks no rule
    /// (`asksRules: false`); the engine opens native requests' scopes itself.
    public init(operation: String, subpath: String? = nil, asksRules: Bool = true) {
        self.operation = operation
        self.subpath = subpath
        self.asksRules = asksRules
        isNative = false
    }

    /// A native request's scope.
    init(native operation: String) {
        self.operation = operation
        subpath = nil
        asksRules = true
        isNative = true
    }

    private static let key = "ShareFlow.FaultScope"

    /// The scope open on this thread. Read only when a rule is armed.
    static var current: FaultScope? {
        get { Thread.current.threadDictionary[key] as? FaultScope }
        set { Thread.current.threadDictionary[key] = newValue }
    }

    /// Runs `body` outside the native request open on this thread, if any: an app's callback
    /// (an operation's block) that calls the engine makes requests of its own, each decided
    /// for itself — a retry in a result block is not the failed request again, and a rule
    /// aimed at the callback's request is asked. Any other scope (a server's request, one that
    /// asks no rule) stays open.
    public static func outside<T>(_ body: () throws -> T) rethrows -> T {
        guard let outer = current, outer.isNative else { return try body() }
        current = nil
        defer { current = outer }
        return try body()
    }

    /// Runs `body` inside `scope` (a server's request, whose request-level faults it decided
    /// itself): the engine calls in it decide no request-level fault again.
    public static func run<T>(_ scope: FaultScope, _ body: () throws -> T) rethrows -> T {
        let outer = current
        // Entered anew: a run of the request, which meets its past decisions from the first.
        if outer !== scope { scope.replayed = 0 }
        current = scope
        defer { current = outer }
        return try body()
    }
}

extension Engine {
    /// A request as rules match it, made by `container`'s caller.
    func faultRequest(_ operation: String, container: Container, database: DatabaseScope?, items: [FaultItem]) -> FaultRequest {
        let caller = try? container.session.account
        return FaultRequest(
            operation: operation,
            container: container.containerIdentifier,
            environment: container.environment,
            database: database?.rawValue,
            items: items,
            callerID: caller?.userRecordID,
            callerEmail: caller?.email
        )
    }

    /// The error a fault injects, as CloudKit reports it natively (nil: the rule only delays).
    public static func error(injecting decision: FaultInjector.Decision) -> ShareFlowError? {
        guard let fault = decision.rule.fault else { return nil }
        let rule = "fault rule \(decision.id)"
        let wait = FaultRule.format(decision.rule.retryAfter)
        switch fault {
        case .requestRateLimited:
            return ShareFlowError(
                .requestRateLimited,
                "too many requests (injected by \(rule)); retry after \(wait) s",
                retryAfter: decision.rule.retryAfter
            )
        case .serviceUnavailable:
            return ShareFlowError(
                .serviceUnavailable,
                "the service is unavailable (injected by \(rule)); retry after \(wait) s",
                retryAfter: decision.rule.retryAfter
            )
        case .zoneBusy:
            return ShareFlowError(.zoneBusy, "the zone is busy (injected by \(rule)); retry after \(wait) s", retryAfter: decision.rule.retryAfter)
        case .quotaExceeded:
            return ShareFlowError(.quotaExceeded, "the account's storage quota is exceeded (injected by \(rule))")
        case .changeTokenExpired:
            return ShareFlowError(.changeTokenExpired, "the change token expired (injected by \(rule)); fetch again from the start (nil token)")
        case .networkFailure:
            return ShareFlowError(.networkFailure, "the connection was lost (injected by \(rule), \(decision.rule.when.rawValue))")
        case .authenticationFailed:
            // Over HTTP only (a 401, made by the server): natively no rule of it is asked.
            return nil
        case .partialFailure:
            switch decision.rule.itemCode {
            case .serverRecordChanged:
                return ShareFlowError(
                    .serverRecordChanged,
                    "the record changed on the server (injected by \(rule)); merge with the error's serverRecord and save again"
                )
            case .quotaExceeded:
                return ShareFlowError(.quotaExceeded, "the account's storage quota is exceeded (injected by \(rule))")
            case .limitExceeded:
                return ShareFlowError(.limitExceeded, "the request is too large (injected by \(rule))")
            case .zoneBusy:
                return ShareFlowError(
                    .zoneBusy,
                    "the zone is busy (injected by \(rule)); retry after \(wait) s",
                    retryAfter: decision.rule.retryAfter
                )
            }
        case .zonePurged:
            return nil
        }
    }

    /// Tells observers of `fault.injected` (on the engine's thread, after the decision).
    public func announce(_ injection: FaultInjection, caller: Account?, container: String?) {
        guard events.hasObservers(.faultInjected) else { return }
        var event = Event(.faultInjected, caller: caller, container: container)
        event.injection = injection
        // What observers do with the engine asks no rule (FaultScope.asksRules): no injection
        // loop, however an observer reacts.
        FaultScope.run(FaultScope(operation: "fault.injected", asksRules: false)) { emit(event) }
    }

    /// Decides the request-level fault of a request that starts here, and applies it to
    /// `scope`: the delay slept now (natively the caller's own thread waits), the failure set
    /// to be thrown before or after the request's engine calls run.
    func decideRequestFault(_ request: FaultRequest, into scope: FaultScope, caller: Account?) {
        guard let decision = faults.decide(request) else { return }
        scope.injected.append(decision.rule.fault?.rawValue ?? "latency")
        announce(decision.injection, caller: caller, container: request.container)
        if decision.rule.latencyMs > 0 { Thread.sleep(forTimeInterval: decision.rule.latencyMs / 1000) }
        guard let error = Engine.error(injecting: decision) else { return }
        if decision.rule.fault == .networkFailure, decision.rule.when == .afterCommit {
            scope.afterCommit = error
        } else {
            scope.failure = error
        }
    }

    /// Where a request enters the engine (`EntryPoint`): inside an open scope (an operation's,
    /// a server request's), the request's injected failure; outside one, this call is the
    /// request, its fault decided here first. With no rule armed, `body` at once.
    @inline(__always)
    func enter<T>(
        _ entry: @autoclosure () -> EntryPoint,
        container: @autoclosure () -> Container? = nil,
        database: DatabaseScope? = nil,
        _ body: () throws -> T
    ) throws -> T {
        guard faults.isArmed else { return try body() }
        return try open(entry(), container: container(), database: database) {
            guard let scope = FaultScope.current else { return try body() }
            return try scope.enforce(body)
        }
    }

    /// Opens the request `entry` names when none is open: its request-level fault decided
    /// once, for every engine call `body` makes (each enforces it, `enter`). An entry that
    /// names no operation (`containerCall`) opens nothing.
    func open<T>(
        _ entry: @autoclosure () -> EntryPoint,
        container: @autoclosure () -> Container?,
        database: DatabaseScope?,
        _ body: () throws -> T
    ) rethrows -> T {
        guard faults.isArmed, FaultScope.current == nil else { return try body() }
        let entry = entry()
        guard let operation = entry.operation, let container = container() else { return try body() }
        let scope = FaultScope(native: operation)
        var request = faultRequest(operation, container: container, database: database, items: entry.items)
        request.sentChangeToken = entry.sentChangeToken
        decideRequestFault(request, into: scope, caller: try? container.session.account)
        return try FaultScope.run(scope, body)
    }

    /// The per-item fault of one record of a modify, if a rule strikes it (`zoneBusy`,
    /// `partialFailure`), as the item's error. A `serverRecordChanged` carries the server's
    /// record, as a real conflict does, when the caller can read it.
    func itemFault(_ item: FaultItem, id: RecordID, client: Record?, in database: CloudDatabase) -> ShareFlowError? {
        guard let decision = decideInScope(item, stage: .item, operation: "modifyRecords", in: database) else { return nil }
        guard var error = Engine.error(injecting: decision) else { return nil }
        error.message = "\(id.recordName): \(error.message)"
        if error.code == .serverRecordChanged, let client {
            error.conflict = RecordConflict(server: try? fetchRecord(id, in: database), client: client.duplicate(), ancestor: client.ancestor())
        }
        return error
    }

    /// Asks the rules of `stage` about one item or zone of the request open on this thread (or,
    /// with none open, of a native `operation`), and when one fires, does what every
    /// injection does: notes it for the access log, tells `fault.injected`'s observers and
    /// takes its delay. Nil inside a scope that asks no rule.
    private func decideInScope(
        _ item: FaultItem,
        stage: FaultStage,
        operation: String,
        in database: CloudDatabase,
        sentChangeToken: Bool = false
    ) -> FaultInjector.Decision? {
        let scope = FaultScope.current
        guard scope?.asksRules ?? true else { return nil }
        let key = "\(stage) \(operation) \(item) \(sentChangeToken)"
        if let scope, scope.replayed < scope.decisions.count {
            let past = scope.decisions[scope.replayed]
            if past.key == key {
                // Met before, by a run of this request that answered no one: the same decision,
                // already announced (`fault.injected` is never held back with a run).
                scope.replayed += 1
                return past.decision
            }
            scope.decisions.removeSubrange(scope.replayed...)
        }
        var request = faultRequest(scope?.operation ?? operation, container: database.container, database: database.databaseScope, items: [item])
        request.subpath = scope?.subpath
        request.sentChangeToken = sentChangeToken
        let decided = faults.decide(request, stage: stage)
        if let scope {
            scope.decisions.append((key, decided))
            scope.replayed += 1
        }
        guard let decision = decided else { return nil }
        scope?.injected.append(decision.rule.fault?.rawValue ?? "latency")
        announce(decision.injection, caller: try? database.container.session.account, container: database.container.containerIdentifier)
        delay(decision, in: scope)
        return decision
    }

    /// An item's or zone's delay: over HTTP left to the server, which sleeps it on the request's
    /// connection once the engine is done (never on an engine thread); natively slept
    /// now, on the caller's own thread. Either way a request's item and zone delays come to
    /// `maxDelayMs` at most (natively each was slept in full: one rule of 60 s on a 400-item
    /// modify held its caller 400 minutes).
    private func delay(_ decision: FaultInjector.Decision, in scope: FaultScope?) {
        guard decision.rule.latencyMs > 0 else { return }
        guard let scope else { return Thread.sleep(forTimeInterval: decision.rule.latencyMs / 1000) }
        let ms = max(0, min(decision.rule.latencyMs, FaultScope.maxDelayMs - scope.delayMs))
        scope.delayMs += ms
        if scope.subpath == nil, ms > 0 { Thread.sleep(forTimeInterval: ms / 1000) }
    }

    /// The per-zone fault of a zone feed (`zoneBusy`, `changeTokenExpired`), if a rule strikes.
    func zoneFeedFault(_ zoneID: RecordZoneID, sentChangeToken: Bool, in database: CloudDatabase) -> ShareFlowError? {
        guard faults.isArmed,
            let decision = decideInScope(
                FaultItem(zone: zoneID.zoneName),
                stage: .zone,
                operation: "recordZoneChanges",
                in: database,
                sentChangeToken: sentChangeToken
            )
        else { return nil }
        guard var error = Engine.error(injecting: decision) else { return nil }
        error.message = "zone \(zoneID.zoneName): \(error.message)"
        return error
    }

    /// `zonePurged` (SPEC §15): the zones of `database` a rule reports purged in this page of
    /// the database feed, moved from changed to deleted with reason `purged`. The data stay.
    func purgeFaults(_ page: inout DatabaseChanges, in database: CloudDatabase) {
        guard faults.arms(.zonePurged), FaultScope.current?.asksRules ?? true else { return }
        let zones = ((try? fetchAllRecordZones(in: database).map(\.zoneID)) ?? []) + page.changedZoneIDs
        var seen = Set<RecordZoneID>(page.deletions.map(\.zoneID))
        for zoneID in zones.sorted(by: { ($0.zoneName, $0.ownerName) < ($1.zoneName, $1.ownerName) })
        where !zoneID.isDefaultZone && seen.insert(zoneID).inserted {
            guard decideInScope(FaultItem(zone: zoneID.zoneName), stage: .databaseFeed, operation: "databaseChanges", in: database) != nil
            else { continue }
            page.changedZoneIDs.removeAll { $0 == zoneID }
            page.deletions.append((zoneID, "purged"))
        }
    }
}

extension FaultItem {
    /// A record, by its ID (and type, when known).
    init(_ id: RecordID, type: String? = nil) {
        self.init(zone: id.zoneID.zoneName, recordType: type, recordName: id.recordName)
    }
}

extension FaultScope {
    /// Runs `body` as one engine call of this request: not at all when it failed before
    /// commit, and failing after it when it fails after commit.
    func enforce<T>(_ body: () throws -> T) throws -> T {
        if let failure { throw failure }
        let result = try body()
        if let afterCommit { throw afterCommit }
        return result
    }
}
