import Foundation
import Synchronization

/// One item of a request, as fault rules match it: a record to save, fetch or delete, or a
/// zone of a feed.
public struct FaultItem: Sendable, Equatable {
    /// The zone name.
    public var zone: String?
    /// The record type, when known (a fetch or a delete by ID has none).
    public var recordType: String?
    /// The record name, which a rule's `recordName` glob matches.
    public var recordName: String?

    /// An item of the given zone, record type and record name, each optional.
    public init(zone: String? = nil, recordType: String? = nil, recordName: String? = nil) {
        self.zone = zone
        self.recordType = recordType
        self.recordName = recordName
    }
}

/// What an operation (or one item of it) is, as fault rules match it (SPEC §15 F1).
public struct FaultRequest: Sendable {
    /// The native operation's name (`modifyRecords`), and over HTTP the request's subpath
    /// (`records/modify`): a rule naming either matches.
    public var operation: String
    /// Over HTTP, the request's subpath; nil natively.
    public var subpath: String?
    /// The container identifier.
    public var container: String
    /// The environment the request reads and writes.
    public var environment: CloudEnvironment
    /// `private`, `shared` or `public`; nil for an operation of no database (discovery).
    public var database: String?
    /// What the request is about. A rule naming a zone, record type or record name matches a
    /// request when one of its items matches all three; a request with none matches only
    /// rules that name none.
    public var items: [FaultItem]
    /// The caller's userRecordID and email, if they have one.
    public var callerID: String?
    /// The caller's email, which a rule's `caller` matches in any case.
    public var callerEmail: String?
    /// Over HTTP: only there can a request fail authentication.
    public var overHTTP = false
    /// Whether the request (or, for a zone of a feed, that zone) gave a change token: only
    /// then can the token have expired. A fetch from the start is how a client recovers from
    /// `changeTokenExpired`, so that fault never strikes one.
    public var sentChangeToken = false

    /// A request about `items`, by a caller of `callerID` and `callerEmail`.
    public init(
        operation: String,
        subpath: String? = nil,
        container: String,
        environment: CloudEnvironment,
        database: String? = nil,
        items: [FaultItem] = [],
        callerID: String? = nil,
        callerEmail: String? = nil
    ) {
        self.operation = operation
        self.subpath = subpath
        self.container = container
        self.environment = environment
        self.database = database
        self.items = items
        self.callerID = callerID
        self.callerEmail = callerEmail
    }

    /// A request about one item, of `zone`, `recordType` and `recordName` (all nil: about none).
    public init(
        operation: String,
        subpath: String? = nil,
        container: String,
        environment: CloudEnvironment,
        database: String? = nil,
        zone: String?,
        recordType: String? = nil,
        recordName: String? = nil,
        callerID: String? = nil,
        callerEmail: String? = nil
    ) {
        let item = FaultItem(zone: zone, recordType: recordType, recordName: recordName)
        self.init(
            operation: operation,
            subpath: subpath,
            container: container,
            environment: environment,
            database: database,
            items: item == FaultItem() ? [] : [item],
            callerID: callerID,
            callerEmail: callerEmail
        )
    }

    /// The same request, about one of its items.
    public func about(_ item: FaultItem) -> FaultRequest {
        var r = self
        r.items = [item]
        return r
    }
}

/// Where in an operation a fault is decided: each fault strikes at one of these (SPEC §15 F2),
/// so a rule is counted only where its fault can happen.
public enum FaultStage: Sendable {
    /// Before the operation runs: the request's own error, a delay, a lost connection.
    case request
    /// Each record saved or deleted by a modify: `zoneBusy`, `partialFailure`.
    case item
    /// Each zone of a zone feed: `zoneBusy`, `changeTokenExpired`.
    case zone
    /// Each zone a database feed could name: `zonePurged`.
    case databaseFeed

    /// Whether `fault` strikes here in `operation` (native name).
    func admits(_ fault: FaultRule.Fault?, request: FaultRequest) -> Bool {
        let operation = request.operation
        switch self {
        case .request:
            switch fault {
            case nil, .requestRateLimited?, .serviceUnavailable?, .quotaExceeded?, .networkFailure?: return true
            case .authenticationFailed?: return request.overHTTP
            case .zoneBusy?: return operation != "modifyRecords" && operation != "recordZoneChanges"
            case .changeTokenExpired?: return operation == "databaseChanges" && request.sentChangeToken
            case .partialFailure?, .zonePurged?: return false
            }
        case .item: return fault == .zoneBusy || fault == .partialFailure
        case .zone: return fault == .zoneBusy || (fault == .changeTokenExpired && request.sentChangeToken)
        case .databaseFeed: return fault == .zonePurged
        }
    }
}

/// One fault injected (SPEC §15 F3): `sf.faults.history()`'s entries and `fault.injected`'s fields.
public struct FaultInjection: Sendable, Equatable {
    /// When, in seconds since 1970.
    public let time: Double
    /// The id of the rule that fired, as `FaultInjector.add(_:owner:)` returned it.
    public let rule: Int
    /// Nil for a rule that only delayed.
    public let fault: FaultRule.Fault?
    /// The request's native operation name (`modifyRecords`); over HTTP, the subpath of a
    /// request that runs none (`zones/list`).
    public let operation: String
    /// The caller's email, else their userRecordID; nil for no caller.
    public let caller: String?
    /// The zone of the item the rule matched, if any.
    public let zone: String?
    /// The record name of the item the rule matched, if any.
    public let recordName: String?
}

/// The armed fault rules and what they injected (SPEC §15): what an operation, or an item of
/// a modify, asks before it runs. Each rule has its own generator, seeded when it is armed,
/// and its own counts, so the same rules, seed and requests give the same faults (F3). Safe
/// from any thread: one lock, held only while deciding; with no rule armed, asking costs one
/// atomic load (`isArmed`). An engine's is `engine.faults`.
///
/// ```swift
/// let id = try engine.faults.add(try FaultRule(["fault": .string("serviceUnavailable"), "count": .number(1)], name: "test"))
/// let first = Result { try container.privateCloudDatabase.fetchRecord(tripID) }    // .failure: serviceUnavailable
/// let second = Result { try container.privateCloudDatabase.fetchRecord(tripID) }   // .success: the count is spent
/// print(engine.faults.history().map(\.rule))                                         // [id]
/// engine.faults.remove(id: id)
/// ```
public final class FaultInjector: @unchecked Sendable {
    /// Who armed a rule: the config file's rules outlive `clear()`; a plugin's end when it unloads.
    public enum Owner: Sendable, Equatable {
        /// The config file's `faults`: `clear()` never removes them.
        case config
        /// Armed at run time (Lua, the admin route): `clear()` removes them.
        case runtime
        /// Armed by the named plugin: removed when it unloads, and by `clear()`.
        case plugin(String)
    }

    struct Armed {
        let id: Int
        let rule: FaultRule
        let owner: Owner
        var generator: SplitMix64
        /// The rule's recordName, compiled once.
        let glob: Glob?
        var matches = 0
        var injections = 0
    }

    /// A decision: the rule that fired, its id, and what was recorded.
    public struct Decision: Sendable {
        /// The id of the rule that fired.
        public let id: Int
        /// The rule that fired.
        public let rule: FaultRule
        /// The injection recorded in the history.
        public let injection: FaultInjection
    }

    /// History kept: the last injections.
    public static let historyLimit = 1_000
    /// Rules armed at once, at most: each is asked on every request.
    public static let maxRules = 1_000

    private let lock = NSLock()
    private var armed: [Armed] = []
    private let armedCount = Atomic<Int>(0)
    private var nextID = 1
    private var kept: [FaultInjection] = []
    /// Where the next entry of the history ring goes, once it is full.
    private var ringStart = 0

    /// An injector with no rule armed.
    public init() {}

    /// Whether any rule is armed: what the hot paths ask first.
    @inline(__always)
    public var isArmed: Bool { armedCount.load(ordering: .relaxed) > 0 }

    /// Arms `rule`; returns its id. More than `maxRules` at once is `limitExceeded`.
    @discardableResult
    public func add(_ rule: FaultRule, owner: Owner = .runtime) throws -> Int {
        try lock.withLock {
            guard armed.count < FaultInjector.maxRules else {
                throw ShareFlowError(.limitExceeded, "\(FaultInjector.maxRules) fault rules are armed already; remove some first")
            }
            let id = nextID
            nextID += 1
            armed.append(Armed(id: id, rule: rule, owner: owner, generator: SplitMix64(seed: rule.seed), glob: rule.recordName.map(Glob.init)))
            armedCount.store(armed.count, ordering: .relaxed)
            return id
        }
    }

    /// Whether a rule of `fault` is armed (a database feed lists its zones for `zonePurged`
    /// only when one is).
    public func arms(_ fault: FaultRule.Fault) -> Bool {
        guard isArmed else { return false }
        return lock.withLock { armed.contains { $0.rule.fault == fault } }
    }

    /// Disarms rule `id`; false if no rule has it.
    @discardableResult
    public func remove(id: Int) -> Bool {
        removeAll(ids: [id]) == 1
    }

    /// Disarms the rules armed at run time (from Lua, a plugin's too, and the admin route) —
    /// never the config file's. Returns how many went.
    @discardableResult
    public func clear() -> Int {
        removeAll { $0 != .config }
    }

    /// Disarms every rule of owners `matching` (a plugin unloading: `.plugin(name)`).
    @discardableResult
    public func removeAll(where matching: (Owner) -> Bool) -> Int {
        lock.withLock {
            let before = armed.count
            armed.removeAll { matching($0.owner) }
            armedCount.store(armed.count, ordering: .relaxed)
            return before - armed.count
        }
    }

    /// Rules taken out by `detach(where:)`, to be armed again as they were.
    public struct Detached {
        fileprivate let rules: [Armed]
    }

    /// Disarms the rules of owners `matching`, keeping them (their counts and generators) to
    /// arm again: a plugin's old version's rules while its new version loads.
    public func detach(where matching: (Owner) -> Bool) -> Detached {
        lock.withLock {
            let taken = armed.filter { matching($0.owner) }
            armed.removeAll { matching($0.owner) }
            armedCount.store(armed.count, ordering: .relaxed)
            return Detached(rules: taken)
        }
    }

    /// Arms detached rules again, in the order they were first armed (past the rule limit
    /// too: they were armed before).
    public func reattach(_ detached: Detached) {
        lock.withLock {
            armed = (armed + detached.rules).sorted { $0.id < $1.id }
            armedCount.store(armed.count, ordering: .relaxed)
        }
    }

    private func removeAll(ids: Set<Int>) -> Int {
        lock.withLock {
            let before = armed.count
            armed.removeAll { ids.contains($0.id) }
            armedCount.store(armed.count, ordering: .relaxed)
            return before - armed.count
        }
    }

    /// The armed rules, oldest first.
    public func list() -> [(id: Int, rule: FaultRule, owner: Owner)] {
        lock.withLock { armed.map { ($0.id, $0.rule, $0.owner) } }
    }

    /// The last `historyLimit` injections, oldest first.
    public func history() -> [FaultInjection] {
        lock.withLock { Array(kept[ringStart...] + kept[..<ringStart]) }
    }

    /// The first armed rule whose fault strikes at `stage` that matches `request` and fires,
    /// if any — its match counted, its generator drawn, its injection recorded. Rules are
    /// asked in the order armed; a rule that matches but does not fire (by `after`, chance or
    /// `count`) lets the next be asked.
    public func decide(_ request: FaultRequest, stage: FaultStage = .request) -> Decision? {
        guard isArmed else { return nil }
        let decision: Decision? = lock.withLock {
            for index in armed.indices {
                let rule = armed[index].rule
                guard stage.admits(rule.fault, request: request),
                    let item = FaultInjector.matches(rule, request, glob: armed[index].glob)
                else { continue }
                armed[index].matches += 1
                // Drawn at every match, whatever else decides: the sequence of draws is the
                // sequence of matches, so a seed replays exactly (F3).
                let roll = armed[index].generator.nextUnitDouble()
                guard armed[index].matches > rule.after, roll < rule.probability,
                    rule.count.map({ armed[index].injections < $0 }) ?? true
                else { continue }
                armed[index].injections += 1
                let injection = FaultInjection(
                    time: EngineClock.seconds,
                    rule: armed[index].id,
                    fault: rule.fault,
                    operation: request.operation,
                    caller: request.callerEmail ?? request.callerID,
                    zone: item?.zone,
                    recordName: item?.recordName
                )
                record(injection)
                Counted.faultInjected(operation: request.operation, fault: rule.fault?.rawValue ?? "delay")
                return Decision(id: armed[index].id, rule: rule, injection: injection)
            }
            return nil
        }
        return decision
    }

    /// Under the lock.
    private func record(_ injection: FaultInjection) {
        if kept.count < FaultInjector.historyLimit {
            kept.append(injection)
        } else {
            kept[ringStart] = injection
            ringStart = (ringStart + 1) % FaultInjector.historyLimit
        }
    }

    /// Nil when `rule` does not match `r`; else the item it matched (`.some(nil)`: the rule
    /// names no item, and the request's first item, if any, is the one recorded).
    static func matches(_ rule: FaultRule, _ r: FaultRequest, glob: Glob? = nil) -> FaultItem?? {
        if rule.operation != "*", rule.operation != r.operation, rule.operation != r.subpath {
            // A subpath rule matches a native call of what it runs (`records/modify` ≡
            // `modifyRecords`), not another subpath that runs the same.
            guard r.subpath == nil, let native = FaultRule.subpaths[rule.operation] ?? nil, native == r.operation else { return nil }
        }
        if let container = rule.container, container != r.container { return nil }
        if let environment = rule.environment, environment != r.environment { return nil }
        if let database = rule.database, database != r.database { return nil }
        if let caller = rule.caller {
            guard caller == r.callerID || caller.lowercased() == r.callerEmail?.lowercased() else { return nil }
        }
        guard rule.zone != nil || rule.recordType != nil || rule.recordName != nil else { return .some(r.items.first) }
        for item in r.items {
            if let zone = rule.zone, zone != item.zone { continue }
            if let type = rule.recordType, type != item.recordType { continue }
            if let pattern = rule.recordName {
                guard let name = item.recordName, (glob ?? Glob(pattern)).matches(name) else { continue }
            }
            return .some(item)
        }
        return nil
    }
}

/// SplitMix64 (Steele, Lea and Flood): a small generator whose whole state is its seed, so a
/// rule armed again with the same seed draws the same numbers on every platform (and a bench
/// or a test run replays its inputs).
package struct SplitMix64 {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in [0, 1) from the top 53 bits.
    package mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}
